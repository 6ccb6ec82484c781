import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { requestValue } from '../../src/scoring/request-row.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { parseCsv, parseJsonLines, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { sqlDisagreements, sqlPredictions } from './sql-predictions.js';

// Queue mode against the real server: what two worker processes write is, byte for byte, what one
// `score` process writes, and every value in it is the server's own SQL answer for that row.

const conn = connectMindsdb(inject('mindsdbUrl'));
const MODEL = 'mindsdb/home_rentals_model';
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const f = useQueueFixture();
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

const manifestOf = async (folder: string) => JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;

/** Two worker processes on the suite's MindsDB, each logging that it started before a run is enqueued. */
async function twoWorkers(): Promise<void> {
  f.setupService(conn.url);
  const workers = [f.worker(), f.worker()];
  await waitFor('both workers to start', () => workers.every((w) => w.log().includes('worker started')));
}

/**
 * Scores `input` with `score`, then through the workers with `enqueue --wait`, with the same
 * options; expects `files` byte-identical in both run folders, the same profile and model in both
 * manifests, and both workers to have scored segments. Answers the queued run's folder.
 */
async function scoreBoth(name: string, input: string, options: string[], files: string[]): Promise<string> {
  const out = join(tmp.dir, name);
  const direct = await runCli(['score', input, '--model', MODEL, '--out', join(out, 'direct'), '--run-id', name, ...options, '--json'], f.env());
  expect(direct.code, direct.stderr).toBe(0);
  const queued = await runCli(['enqueue', input, '--model', MODEL, '--out', join(out, 'queued'), '--run-id', name, ...options, '--wait'], f.env());
  expect(queued.code, queued.stderr + f.workers.map((w) => w.log().slice(-2000)).join('\n')).toBe(0);
  for (const file of files) {
    const [a, b] = await Promise.all([readFile(join(out, 'direct', name, file)), readFile(join(out, 'queued', name, file))]);
    expect(sha256(b), `${file} of the queued run`).toBe(sha256(a));
  }
  // The workers' segment profiles, merged, are what one process finds; both pinned the same version.
  const [a, b] = await Promise.all([manifestOf(join(out, 'direct', name)), manifestOf(join(out, 'queued', name))]);
  expect(b.profile).toEqual(a.profile);
  expect(b.model).toEqual(a.model);
  const segmentPids = (await f.queue.logs(name)).flatMap((l) => (l.startsWith('segment ') ? [/\(\S+:(\d+), attempt/.exec(l)![1]] : []));
  expect(new Set(segmentPids)).toEqual(new Set(f.workers.map((w) => String(w.child.pid))));
  return join(out, 'queued', name);
}

describe('queued runs against a real MindsDB', () => {
  it('100,000 rows through two workers: byte-identical to score, and every value is the server’s SQL answer', async () => {
    const ROWS = 100_000;
    // Three rows the engine refuses (sqft is not a number): the server fails their whole request,
    // the tool bisects it, and errors.jsonl holds them, in both runs alike. (Few: each costs a
    // bisection of its batch, each failing half tried twice, a second or more.)
    const bad = (i: number) => i % 33_331 === 4_321;
    const input = join(tmp.dir, 'rentals-100k.csv');
    await writeFile(
      input,
      rentalsText(ROWS, (row, i) => {
        if (bad(i)) row.sqft = 'lots';
      }),
    );
    // The same rows, the refused ones with their number: SQL answers every row of a file or none.
    const truth = await sqlPredictions(conn, 'home_rentals_model', rentalsText(ROWS), 'listing_id');
    expect(truth.size).toBe(ROWS);
    await twoWorkers();
    const folder = await scoreBoth('big', input, ['--segment-rows', '10000'], ['predictions.csv', 'errors.jsonl']);

    const badIds = Array.from({ length: ROWS }, (_, i) => i)
      .filter(bad)
      .map((i) => `L${String(i).padStart(8, '0')}`);
    expect(badIds.length).toBe(3);
    const scored = parseCsv(await readFile(join(folder, 'predictions.csv'), 'utf8'));
    expect(scored).toHaveLength(ROWS - badIds.length);
    expect(sqlDisagreements(scored, truth, 'listing_id')).toEqual([]);
    const errors = parseJsonLines(await readFile(join(folder, 'errors.jsonl'), 'utf8'));
    expect(errors.map((e) => (e.input as Record<string, string>).listing_id)).toEqual(badIds);
    for (const e of errors)
      expect(e).toMatchObject({ status: 500, title: 'MLEngineException', detail: expect.stringContaining("column 'sqft' is not a number") as unknown });
    expect(await manifestOf(folder)).toMatchObject({
      state: 'succeeded',
      model: { requestedVersion: null, resolvedVersion: 2 },
      counts: { rowsIn: ROWS, rowsScored: ROWS - badIds.length, rowsQuarantined: badIds.length },
      warnings: [],
    });
  });

  it('JSON Lines and Parquet through two workers: byte-identical to score, every value the server’s SQL answer', async () => {
    const ROWS = 5_000;
    const csv = rentalsText(ROWS);
    const truth = await sqlPredictions(conn, 'home_rentals_model', csv, 'listing_id');
    // JSON Lines typed as the CSV's values are sent (numbers as numbers, empty as null), so that the model sees the same rows.
    const jsonl = join(tmp.dir, 'rentals.jsonl');
    const typed = parseCsv(csv).map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).map(([k, v]) => [k, requestValue(v, true)]))));
    await writeFile(jsonl, `${typed.join('\n')}\n`);
    // Parquet as DuckDB writes it from the CSV, typing the columns itself (one thread: the same file every time).
    const csvPath = join(tmp.dir, 'rentals-5k.csv');
    const parquet = join(tmp.dir, 'rentals.parquet');
    await writeFile(csvPath, csv);
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const duckdb: DuckDBConnection = await instance.connect();
    try {
      await duckdb.run(`COPY (SELECT * FROM read_csv('${csvPath}', header = true)) TO '${parquet}' (FORMAT parquet, ROW_GROUP_SIZE 1024)`);
      await twoWorkers();
      // Ten batches a segment: a worker holds each segment while it sends them, so both workers take segments.
      const options = ['--segment-rows', '1000', '--batch-size', '100'];

      const fromJsonl = await scoreBoth('jsonl', jsonl, options, ['predictions.jsonl', 'errors.jsonl']);
      const jsonlRows = parseJsonLines(await readFile(join(fromJsonl, 'predictions.jsonl'), 'utf8'));
      expect(jsonlRows).toHaveLength(ROWS);
      expect(sqlDisagreements(jsonlRows, truth, 'listing_id')).toEqual([]);

      const fromParquet = await scoreBoth('parquet', parquet, options, ['predictions.parquet', 'errors.jsonl']);
      const read = await duckdb.runAndReadAll(`SELECT * FROM read_parquet('${join(fromParquet, 'predictions.parquet')}')`);
      const parquetRows = read.getRowObjectsJson() as Record<string, unknown>[];
      expect(parquetRows).toHaveLength(ROWS);
      expect(sqlDisagreements(parquetRows, truth, 'listing_id')).toEqual([]);
      for (const folder of [fromJsonl, fromParquet])
        expect(await manifestOf(folder)).toMatchObject({ state: 'succeeded', counts: { rowsScored: ROWS, rowsQuarantined: 0 } });
    } finally {
      duckdb.closeSync();
      instance.closeSync();
    }
  });
});
