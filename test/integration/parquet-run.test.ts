import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { RENTAL_COLUMNS } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli } from '../helpers/cli.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { expectedRental, parseCsv, startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const ROWS = 12_000;
const MODEL = 'mindsdb/home_rentals_model';
let sim: Simulator;
let s3: S3Server;
let storage: Storage;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let instance: DuckDBInstance;
let duckdb: DuckDBConnection;
let env: Record<string, string>;
let csv: string;
let parquet: string;

async function query(sql: string): Promise<Record<string, unknown>[]> {
  return (await duckdb.runAndReadAll(sql)).getRowObjectsJson();
}
const score = (args: string[]) => runCli(['score', ...args, '--model', MODEL], env);

beforeAll(async () => {
  sim = await startSimulator();
  s3 = await startS3Server(['data', 'results']);
  storage = createStorage(s3.settings);
  tmp = await tempDir();
  env = { MODEL_SERVICE_URL: sim.url, ...s3.env };
  // One thread: DuckDB then writes the same row groups every time.
  instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  duckdb = await instance.connect();
  csv = join(tmp.dir, 'rentals.csv');
  parquet = join(tmp.dir, 'rentals.parquet');
  await writeRentals(csv, ROWS);
  // DuckDB types the columns itself: ids and text as VARCHAR, counts as BIGINT, with NULLs where CSV had nothing.
  await duckdb.run(`COPY (SELECT * FROM read_csv('${csv}', header = true)) TO '${parquet}' (FORMAT parquet, ROW_GROUP_SIZE 2048)`);
  await storage.write(parseLocation('s3://data/parquet/rentals.parquet'), await readFile(parquet));
});
afterAll(async () => {
  duckdb?.closeSync();
  instance?.closeSync();
  storage.close();
  await Promise.all([sim.close(), s3.close(), tmp.cleanup()]);
});

describe('Parquet in and out, read back by DuckDB', () => {
  it('scores a Parquet file DuckDB wrote into Parquet that DuckDB reads back with every row, its types and its predictions', async () => {
    const out = join(tmp.dir, 'runs');
    const result = await score([parquet, '--out', out, '--run-id', 'pq', '--segment-rows', '5000', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const manifest = JSON.parse(await readFile(join(out, 'pq', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.input).toMatchObject({ format: 'parquet', rows: ROWS });
    // Whole row groups of 2,048 rows: three to a segment of about 5,000 rows.
    expect(manifest.counts?.segments).toBe(Math.ceil(ROWS / (3 * 2048)));
    expect(manifest.outputs[0]).toMatchObject({ file: 'predictions.parquet', rows: ROWS });

    const output = join(out, 'pq', 'predictions.parquet');
    const columnTypes = async (file: string) =>
      Object.fromEntries((await query(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).map((c) => [String(c.column_name), String(c.column_type)]));
    const types = await columnTypes(output);
    const inputTypes = await columnTypes(parquet);
    for (const column of RENTAL_COLUMNS) expect(types[column]).toBe(inputTypes[column]);
    expect(types).toMatchObject({ rental_price: 'DOUBLE', rental_price_confidence: 'DOUBLE', rental_price_min: 'DOUBLE', rental_price_max: 'DOUBLE' });

    const rows = await query(`SELECT * FROM read_parquet('${output}')`);
    const source = parseCsv(await readFile(csv, 'utf8'));
    expect(rows).toHaveLength(ROWS);
    rows.forEach((r, i) => {
      expect(r.listing_id).toBe(source[i].listing_id);
      expect(r.notes ?? '').toBe(source[i].notes);
      const expected = expectedRental(source[i]);
      expect(r.rental_price).toBe(expected.rental_price);
      expect(r.rental_price_min).toBe(expected.rental_price_min);
    });
    // Input columns kept their values exactly: DuckDB finds no row that differs from the file it wrote.
    const differing = await query(
      `SELECT count(*) AS n FROM (SELECT ${RENTAL_COLUMNS.join(', ')} FROM read_parquet('${parquet}') EXCEPT ALL SELECT ${RENTAL_COLUMNS.join(', ')} FROM read_parquet('${output}'))`,
    );
    expect(Number(differing[0].n)).toBe(0);
  });

  it('reads Parquet on S3 by ranged reads into the same bytes; CSV into sharded Parquet; refuses gzip for Parquet', async () => {
    const s3Run = await score(['s3://data/parquet/rentals.parquet', '--out', 's3://results/pq', '--run-id', 's3', '--segment-rows', '5000']);
    expect(s3Run.code, s3Run.stderr).toBe(0);
    const local = await score([parquet, '--out', join(tmp.dir, 'runs'), '--run-id', 'pq-again', '--segment-rows', '5000', '--concurrency', '1']);
    expect(local.code).toBe(0);
    const chunks: Buffer[] = [];
    for await (const chunk of await storage.read(parseLocation('s3://results/pq/s3/predictions.parquet'))) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(await readFile(join(tmp.dir, 'runs', 'pq-again', 'predictions.parquet')))).toBe(true);

    const fromCsv = await score([
      csv,
      '--out',
      join(tmp.dir, 'runs'),
      '--run-id',
      'csv-pq',
      '--format',
      'parquet',
      '--max-rows-per-file',
      '5000',
      '--row-number',
    ]);
    expect(fromCsv.code, fromCsv.stderr).toBe(0);
    const shards = ['00000', '00001', '00002'].map((n) => join(tmp.dir, 'runs', 'csv-pq', `predictions-${n}.parquet`));
    const counts = await query(
      `SELECT count(*) AS n, min(row_number) AS first, max(row_number) AS last FROM read_parquet([${shards.map((s) => `'${s}'`).join(', ')}])`,
    );
    expect(counts[0]).toMatchObject({ n: String(ROWS), first: '1', last: String(ROWS) });
    const sqft = await query(`SELECT typeof(sqft) AS t FROM read_parquet('${shards[0]}') LIMIT 1`);
    // CSV values are text as written.
    expect(sqft[0].t).toBe('VARCHAR');

    const gzip = await score([parquet, '--out', join(tmp.dir, 'runs'), '--compress', 'gzip']);
    expect(gzip.code).toBe(2);
    expect(gzip.stderr).toContain('--compress gzip: Parquet output compresses its own pages');
    await writeFile(join(tmp.dir, 'not.parquet'), 'a,b\n1,2\n');
    const bad = await score([join(tmp.dir, 'not.parquet'), '--out', join(tmp.dir, 'runs')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(join(tmp.dir, 'not.parquet'));
  });
});
