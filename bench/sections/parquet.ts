/**
 * Parquet (--full only): the same rows as Parquet written by DuckDB (row groups of 100,000),
 * scored into Parquet; time and peak RSS beside the CSV run's of the same size, and every row
 * read back by DuckDB.
 */
import { rm } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Section } from '../report.js';
import { defaultScore, rawScore, scoreRun } from '../score-run.js';

export const parquet: Section = {
  id: 'parquet',
  title: 'Parquet in, Parquet out',
  fullOnly: true,
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_PARQUET_ROWS', 1_000_000);
    const csv = await defaultScore(ctx, 'csv', rows);
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const duckdb = await instance.connect();
    const input = `${ctx.inputsDir}/rentals-${rows}.parquet`;
    try {
      await duckdb.run(`COPY (SELECT * FROM read_csv('${await ctx.input(rows, 'csv')}', header = true)) TO '${input}' (FORMAT parquet, ROW_GROUP_SIZE 100000)`);
      const sim = await ctx.simulator();
      const r = await scoreRun(ctx, {
        label: `parquet ${rows}`,
        input,
        rows,
        serviceUrl: sim.url,
        inspect: async (folder) => {
          const query = `SELECT count(*) AS n, count(rental_price) AS scored FROM read_parquet('${folder}/predictions.parquet')`;
          const [count] = (await duckdb.runAndReadAll(query)).getRowObjectsJson();
          if (Number(count.n) !== rows || Number(count.scored) !== rows)
            throw new Error(`DuckDB read ${Number(count.n)} rows (${Number(count.scored)} scored) of ${rows}`);
        },
      });
      report.raw.push(rawScore(r));
      report.note(`${rows.toLocaleString('en-US')} rows; DuckDB reads back every row, each with a prediction`);
      report.figure('parquet: time', r.wallSeconds, 's');
      report.figure('parquet: rows/s', rows / r.wallSeconds, 'rows/s');
      report.figure('parquet: peak RSS', r.peakRssMiB, 'MiB');
      report.figure('parquet / CSV peak RSS', r.peakRssMiB / csv.peakRssMiB, 'x');
    } finally {
      duckdb.closeSync();
      instance.closeSync();
      await rm(input, { force: true });
    }
  },
};
