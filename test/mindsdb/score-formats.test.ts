import { DuckDBInstance } from '@duckdb/node-api';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readParquetFile } from '../helpers/parquet-file.js';
import { parseCsv, parseJsonLines, rentalsText, tempDir } from '../helpers/scoring.js';
import { RENTAL_COLUMNS } from '../../src/simulator/sample-data.js';
import { connectMindsdb } from './mindsdb-server.js';
import { churnCsv } from './models.js';
import { scoreCli } from './score-cli.js';
import { expectSqlPredictions, RENTAL_PRICE_MEMBERS, sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 3_000;
const RENTAL = 'mindsdb/home_rentals_model';
/** The rentals columns a user's JSON Lines would hold as numbers. */
const NUMERIC = new Set(['number_of_rooms', 'number_of_bathrooms', 'sqft', 'days_on_market', 'initial_price']);

let tmp: Awaited<ReturnType<typeof tempDir>>;
let csv: string;
/** The server's own SQL batch prediction of the rentals, by listing_id. */
let truth: Map<string, Record<string, unknown>>;

const score = (input: string, runId: string, model = RENTAL) =>
  scoreCli({ input: join(tmp.dir, input), model, service: conn.url, out: join(tmp.dir, 'out'), runId, flags: ['--json'] });

beforeAll(async () => {
  tmp = await tempDir();
  csv = rentalsText(ROWS);
  await writeFile(join(tmp.dir, 'rentals.csv'), csv);
  truth = await sqlPredictions(conn, 'home_rentals_model', csv, 'listing_id');
  expect(truth.size).toBe(ROWS);
});
afterAll(() => tmp.cleanup());

describe('score against a real MindsDB, each format', () => {
  it('scores a CSV and every value equals the server’s own SQL batch prediction for that row', async () => {
    const res = await score('rentals.csv', 'csv');
    expect(res.code, res.stderr).toBe(0);
    const scored = parseCsv(await readFile(join(res.folder, 'predictions.csv'), 'utf8'));
    expect(scored).toHaveLength(ROWS);
    // Input order kept, input values untouched.
    expect(scored.map((r) => r.listing_id)).toEqual(parseCsv(csv).map((r) => r.listing_id));
    expect(scored.map((r) => r.notes)).toEqual(parseCsv(csv).map((r) => r.notes));
    expectSqlPredictions(scored, truth, 'listing_id');
  });

  it('scores JSON Lines of typed values (numbers, nulls, non-ASCII text) to the same predictions', async () => {
    const typed = parseCsv(csv).map((row) =>
      Object.fromEntries(RENTAL_COLUMNS.map((c) => [c, row[c] === '' && c !== 'notes' ? null : NUMERIC.has(c) ? Number(row[c]) : row[c]])),
    );
    await writeFile(join(tmp.dir, 'rentals.jsonl'), typed.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const res = await score('rentals.jsonl', 'jsonl');
    expect(res.code, res.stderr).toBe(0);
    const scored = parseJsonLines(await readFile(join(res.folder, 'predictions.jsonl'), 'utf8'));
    expect(scored).toHaveLength(ROWS);
    // JSON Lines output carries the input's values as they were typed, then the server's numbers as numbers.
    expect(scored.map((r) => Object.fromEntries(RENTAL_COLUMNS.map((c) => [c, r[c]])))).toEqual(typed);
    for (const member of RENTAL_PRICE_MEMBERS) expect(scored.every((r) => typeof r[member] === 'number')).toBe(true);
    expectSqlPredictions(scored, truth, 'listing_id');
  });

  it('scores Parquet that DuckDB wrote into Parquet that the tool’s own reader reads back with the same predictions', async () => {
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const duckdb = await instance.connect();
    try {
      // DuckDB types the columns itself: ids and text as VARCHAR, counts as BIGINT, NULL where the CSV had nothing.
      await duckdb.run(
        `COPY (SELECT * FROM read_csv('${join(tmp.dir, 'rentals.csv')}', header = true)) TO '${join(tmp.dir, 'rentals.parquet')}' (FORMAT parquet, ROW_GROUP_SIZE 1024)`,
      );
    } finally {
      duckdb.closeSync();
      instance.closeSync();
    }
    const res = await score('rentals.parquet', 'parquet');
    expect(res.code, res.stderr).toBe(0);
    const input = await readParquetFile(join(tmp.dir, 'rentals.parquet'));
    const scored = await readParquetFile(join(res.folder, 'predictions.parquet'));
    expect(scored).toHaveLength(ROWS);
    expect(scored.map((r) => Object.fromEntries(RENTAL_COLUMNS.map((c) => [c, r[c]])))).toEqual(input);
    for (const member of RENTAL_PRICE_MEMBERS) expect(scored.every((r) => typeof r[member] === 'number')).toBe(true);
    expectSqlPredictions(scored, truth, 'listing_id');
  });

  it('scores the categorical customer_churn: the class and its confidence, no interval', async () => {
    const churn = churnCsv(2_000);
    await writeFile(join(tmp.dir, 'churn.csv'), churn);
    const res = await score('churn.csv', 'churn', 'mindsdb/customer_churn');
    expect(res.code, res.stderr).toBe(0);
    const text = await readFile(join(res.folder, 'predictions.csv'), 'utf8');
    expect(text.slice(0, text.indexOf('\n')).split(',')).not.toContain('churn_min');
    const scored = parseCsv(text);
    expect(new Set(scored.map((r) => r.churn))).toEqual(new Set(['yes', 'no']));
    expectSqlPredictions(scored, await sqlPredictions(conn, 'customer_churn', churn, 'customer_id'), 'customer_id', ['churn', 'churn_confidence']);
  });
});
