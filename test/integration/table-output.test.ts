import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseDatabaseUrl, formatDatabaseUrl } from '../../src/database/index.js';
import { BatchScorerError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { compareRuns } from '../../src/scoring/compare-runs.js';
import { readManifest } from '../../src/scoring/manifest.js';
import { loadPreparedRun, runFiles } from '../../src/scoring/prepared-run.js';
import { readSegmentsDone } from '../../src/scoring/segment-done.js';
import { stageTable } from '../../src/scoring/table-load.js';
import { RENTAL_COLUMNS } from '../../src/simulator/sample-data.js';
import { createStorage } from '../../src/storage/storage.js';
import { DATABASE_URL, privateSchema } from '../helpers/postgres.js';
import { runCli } from '../helpers/cli.js';
import { rejection } from '../helpers/rejection.js';
import { score, useScoringFixture, writeRentalsWithEngineErrors } from '../helpers/scoring.js';
import { count, expectTableMatchesCsv, stagingTables } from '../helpers/table-rows.js';

// Runs writing into a table of the machine's PostgreSQL: the rows predictions.csv would hold, once,
// whatever happened between staging them and publishing them.

const f = useScoringFixture();
const ROWS = 1200;
let input = '';
beforeAll(async () => {
  input = join(f.dir, 'rentals.csv');
  // Every 100th row is refused by the engine: quarantined, in errors.jsonl, not in the table.
  await writeRentalsWithEngineErrors(input, ROWS, (i) => i % 100 === 7);
});

const BASE = { segmentRows: 250, batchSize: 100, rowNumber: true, maxErrorRate: 0.05 };
const options = () => ({ ...BASE, service: f.sim.url });
const SCORED = ROWS - ROWS / 100;

describe('--out-table', () => {
  it('writes the rows predictions.csv would hold, records the run, and keeps the rest of the run folder', async () => {
    const db = await privateSchema();
    const table = `${db.name}.scores`;
    // A dry run checks where the rows would go, and makes nothing there.
    const dry = await runCli(
      [
        'score',
        input,
        '--model',
        'mindsdb/home_rentals_model',
        '--out',
        f.out,
        '--service',
        f.sim.url,
        '--out-table',
        table,
        '--out-database',
        DATABASE_URL,
        '--dry-run',
      ],
      {},
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`outputs: table ${table}`);
    expect(await db.sql(`SELECT tablename FROM pg_tables WHERE schemaname = $1`, [db.name])).toEqual([]);
    await score(input, f.out, { ...options(), runId: 'files' });
    const manifest = await score(input, f.out, { ...options(), runId: 'table', outTable: table, outDatabase: DATABASE_URL });

    expect(manifest).toMatchObject({ state: 'succeeded', counts: { rowsScored: SCORED, rowsQuarantined: ROWS / 100 } });
    expect(manifest.table).toEqual({
      database: formatDatabaseUrl(parseDatabaseUrl(DATABASE_URL)),
      table,
      runsTable: `${db.name}.batch_scorer_runs`,
      rows: SCORED,
    });
    expect(manifest.outputs.map((o) => o.file)).toEqual(['errors.jsonl']);
    const folder = join(f.out, 'table');
    expect(existsSync(join(folder, 'predictions.csv'))).toBe(false);
    expect(existsSync(join(folder, '_SUCCESS'))).toBe(true);
    expect(existsSync(join(folder, '_work'))).toBe(false);
    // The quarantined rows go to errors.jsonl as for files.
    expect(await readFile(join(folder, 'errors.jsonl'), 'utf8')).toBe(await readFile(join(f.out, 'files', 'errors.jsonl'), 'utf8'));

    await expectTableMatchesCsv(db, table, await readFile(join(f.out, 'files', 'predictions.csv'), 'utf8'));
    const types = await db.sql<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'scores' ORDER BY ordinal_position`,
      [db.name],
    );
    expect(Object.fromEntries(types.map((t) => [t.column_name, t.data_type]))).toEqual({
      row_number: 'bigint',
      ...Object.fromEntries(RENTAL_COLUMNS.map((c) => [c, 'text'])),
      rental_price: 'double precision',
      rental_price_confidence: 'double precision',
      rental_price_min: 'double precision',
      rental_price_max: 'double precision',
      rental_price_anomaly: 'boolean',
    });
    const runs = await db.sql(`SELECT run_id, rows, out_table, manifest, published_at FROM ${db.name}.batch_scorer_runs`);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      run_id: 'table',
      rows: String(SCORED),
      out_table: table,
      manifest: { runId: 'table', state: 'succeeded', table: { rows: SCORED } },
    });
    expect(await stagingTables(db)).toEqual([]);

    // compare reads no table: the runs are compared by their profiles, which agree.
    const storage = createStorage();
    const compared = await compareRuns(storage, runFiles.folder(f.out, 'files'), runFiles.folder(f.out, 'table'));
    storage.close();
    expect(compared).toMatchObject({ mode: 'profile', why: `run B wrote its rows into the table ${table}, which is not read back: compared by profile` });
    expect(compared.mode === 'profile' && compared.drift.columns.every((c) => c.psi === 0)).toBe(true);

    // The same run id from another --out is another run: refused before it scores.
    const other = await rejection(
      score(input, join(f.dir, 'other-out'), { ...options(), runId: 'table', outTable: table, outDatabase: DATABASE_URL }),
      BatchScorerError,
    );
    expect(other.code).toBe('E_RUN_EXISTS');
    expect(other.message).toBe(
      `${db.name}.batch_scorer_runs records run table already, published from ${join(f.out, 'table')}: choose another --run-id (or another --runs-table)`,
    );
    // Another run appends its rows, recorded beside the first.
    await score(input, f.out, { ...options(), runId: 'again', outTable: table, outDatabase: DATABASE_URL, limit: 100 });
    expect(await count(db, table)).toBe(SCORED + 99);
    expect(await count(db, `${db.name}.batch_scorer_runs`)).toBe(2);
  });

  it('types the columns of a Parquet input by its types, explain as jsonb, with the values of its predictions.csv', async () => {
    const db = await privateSchema();
    const parquet = join(f.dir, 'rentals.parquet');
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    await duck.run(`COPY (SELECT * FROM read_csv('${input}', header = true)) TO '${parquet}' (FORMAT parquet)`);
    duck.closeSync();
    const shaping = { ...options(), explain: true, dropColumns: ['notes'] };
    await score(parquet, f.out, { ...shaping, runId: 'pq-files', format: 'csv' });
    await score(parquet, f.out, { ...shaping, runId: 'pq-table', outTable: `${db.name}.pq`, outDatabase: DATABASE_URL });
    await expectTableMatchesCsv(db, `${db.name}.pq`, await readFile(join(f.out, 'pq-files', 'predictions.csv'), 'utf8'));
    const types = await db.sql<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'pq'`,
      [db.name],
    );
    expect(Object.fromEntries(types.map((t) => [t.column_name, t.data_type]))).toMatchObject({
      sqft: 'bigint',
      location: 'text',
      rental_price: 'double precision',
      rental_price_explain: 'jsonb',
    });
  });

  it('refuses a table that does not take the run, naming the column, before scoring anything', async () => {
    const db = await privateSchema();
    const columns = `row_number bigint, ${RENTAL_COLUMNS.map((c) => `${c} text`).join(', ')}, rental_price double precision, rental_price_confidence double precision, rental_price_min double precision, rental_price_max double precision, rental_price_anomaly boolean`;
    const cases: [string, string, RegExp][] = [
      [
        'wrong_type',
        'ALTER TABLE %s ALTER COLUMN rental_price_max TYPE integer',
        /column "rental_price_max" is integer, which does not hold the double precision values the run writes/,
      ],
      ['missing', 'ALTER TABLE %s DROP COLUMN rental_price_confidence', /has no column "rental_price_confidence" \(double precision\), which the run writes/],
      ['unfilled', 'ALTER TABLE %s ADD COLUMN batch text NOT NULL', /column "batch" is NOT NULL without a default, and the run writes no value to it/],
    ];
    for (const [name, change, message] of cases) {
      const table = `${db.name}.${name}`;
      await db.sql(`CREATE TABLE ${table} (${columns})`);
      await db.sql(change.replace('%s', table));
      const before = f.sim.stats.predictRows;
      const err = await rejection(
        score(input, f.out, { ...options(), runId: `refused-${name}`, outTable: table, outDatabase: DATABASE_URL }),
        BatchScorerError,
      );
      expect(err.code).toBe('E_DATABASE_REFUSED');
      expect(err.message).toMatch(new RegExp(`^--out-table ${table}`));
      expect(err.message).toMatch(message);
      // Only the probe's row was sent: the run was refused as it was planned.
      expect(f.sim.stats.predictRows - before).toBeLessThanOrEqual(1);
      expect(await count(db, table)).toBe(0);
    }
    // Wider types than the run's, and columns of the table's own with defaults, are taken.
    await db.sql(
      `CREATE TABLE ${db.name}.wider (id bigint GENERATED ALWAYS AS IDENTITY, ${columns.replace('rental_price double precision', 'rental_price numeric')})`,
    );
    await score(input, f.out, { ...options(), runId: 'wider', outTable: `${db.name}.wider`, outDatabase: DATABASE_URL, limit: 7 });
    expect(await count(db, `${db.name}.wider`)).toBe(7);
  });

  it('publishes once when the run is assembled again after staging, and when two publishes race', async () => {
    const db = await privateSchema();
    const table = `${db.name}.retried`;
    const runs = `${db.name}.batch_scorer_runs`;
    const run = { ...options(), runId: 'retried', outTable: table, outDatabase: DATABASE_URL };
    // The first attempt stages every row, then its publish fails: the table refuses inserts for now.
    await score(input, f.out, { ...run, runId: 'shape', limit: 1 });
    await db.sql(`ALTER TABLE ${db.name}.retried RENAME TO shape`);
    await db.sql(`CREATE TABLE ${table} (LIKE ${db.name}.shape)`);
    await db.sql(`CREATE FUNCTION ${db.name}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'closed for loading'; END $$`);
    await db.sql(`CREATE TRIGGER closed BEFORE INSERT ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${db.name}.refuse()`);
    const err = await rejection(score(input, f.out, run), BatchScorerError);
    expect(err.message).toMatch(/^publishing 1188 rows into .*retried: closed for loading/);
    const [staging] = await stagingTables(db);
    expect(await count(db, `${db.name}.${staging}`)).toBe(SCORED);
    expect(await count(db, table)).toBe(0);
    expect(await count(db, runs)).toBe(1);

    // Two assemblies of the run at once: both find the rows staged, one publishes them.
    await db.sql(`DROP TRIGGER closed ON ${table}`);
    const storage = createStorage();
    const folder = runFiles.folder(f.out, 'retried');
    const prepared = await loadPreparedRun(storage, folder);
    const done = (await readSegmentsDone(storage, prepared)).map((d) => d!);
    const manifest = (await readManifest(storage, folder))!;
    const both = await Promise.all([1, 2].map(() => stageTable(storage, prepared, done, silentLogger)));
    await Promise.all(both.map((staged) => staged.publish(manifest)));
    await Promise.all(both.map((staged) => staged.end()));
    expect(await count(db, table)).toBe(SCORED);
    expect(await stagingTables(db)).toEqual([]);

    // The run resumed after its publish committed (its folder unfinished): it publishes nothing more.
    const resumed = await score(input, f.out, run);
    expect(resumed).toMatchObject({ state: 'succeeded', table: { rows: SCORED } });
    expect(await count(db, table)).toBe(SCORED);
    const distinct = await db.sql<{ n: string }>(`SELECT count(DISTINCT row_number) AS n FROM ${table}`);
    expect(Number(distinct[0].n)).toBe(SCORED);
    expect(await count(db, runs)).toBe(2);
    expect(existsSync(join(f.out, 'retried', '_SUCCESS'))).toBe(true);
    storage.close();
  });
});
