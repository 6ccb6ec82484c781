import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { predictExchanges, startRecordingProxy } from './recording-proxy.js';
import { scoreCli } from './score-cli.js';
import { expectSqlPredictions, sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const MOST_ROWS = 20_000;
const ID = '__mindsdb_row_id';
let tmp: Awaited<ReturnType<typeof tempDir>>;
/** The server's own SQL prediction of the first MOST_ROWS rentals; a file of fewer rows is a prefix of them. */
let truth: Map<string, Record<string, unknown>>;

beforeAll(async () => {
  tmp = await tempDir();
  const csv = rentalsText(MOST_ROWS);
  truth = await sqlPredictions(conn, 'home_rentals_model', csv, 'listing_id');
  expect(truth.size).toBe(MOST_ROWS);
});
afterAll(() => tmp.cleanup());

/**
 * Scores the first `rows` rentals through a recording proxy with these flags; expects the run to
 * succeed with every row's values equal to the SQL prediction, and answers its predict requests
 * after planning's probe (each proven answered whole: one answer row per row sent, with its id),
 * and the most requests the server had in flight at once.
 */
async function scoreRows(rows: number, runId: string, flags: string[]) {
  const input = join(tmp.dir, `rentals-${rows}.csv`);
  await writeFile(input, rentalsText(rows));
  const proxy = await startRecordingProxy(conn.url);
  try {
    const res = await scoreCli({ input, model: 'mindsdb/home_rentals_model', service: proxy.url, out: join(tmp.dir, 'out'), runId, flags });
    expect(res.code, res.stderr).toBe(0);
    const scored = parseCsv(await readFile(join(res.folder, 'predictions.csv'), 'utf8'));
    expectSqlPredictions(scored, new Map([...truth].slice(0, rows)), 'listing_id');
    const [, ...batches] = predictExchanges(proxy.exchanges);
    for (const b of batches.filter((b) => b.status === 200)) expect(b.answered!.map((a) => a[ID])).toEqual(b.sent.map((s) => s[ID]));
    const manifest = JSON.parse(await readFile(join(res.folder, 'manifest.json'), 'utf8')) as Manifest;
    return { batches, manifest, peakInFlight: proxy.peakInFlight() };
  } finally {
    await proxy.close();
  }
}

describe('batch sizes and concurrency against a real MindsDB', () => {
  // A request a row costs the server about 20 ms however small: 250 rows keep --batch-size 1 to a few seconds.
  it.each([
    [1, 250],
    [1_000, 5_000],
    [10_000, MOST_ROWS],
  ])('--batch-size %i: %i rows in full batches, each value as the server’s SQL', async (batchSize, rows) => {
    const { batches, manifest } = await scoreRows(rows, `batch-${batchSize}`, ['--batch-size', String(batchSize)]);
    expect(batches.map((b) => [b.status, b.sent.length])).toEqual(Array.from({ length: rows / batchSize }, () => [200, batchSize]));
    expect(manifest.counts).toMatchObject({ requests: rows / batchSize, retries: 0, rowsScored: rows });
  });

  it.each([32, 64])('--concurrency %i, well above the server’s workers: every row answered exactly once', async (concurrency) => {
    const rows = 4_000;
    const batchSize = 25;
    const { batches, manifest, peakInFlight } = await scoreRows(rows, `concurrency-${concurrency}`, [
      '--batch-size',
      String(batchSize),
      '--concurrency',
      String(concurrency),
    ]);
    // The server works 10 requests at a time (its WSGI workers) and had more than that waiting, never more than asked.
    expect(peakInFlight).toBeGreaterThan(10);
    expect(peakInFlight).toBeLessThanOrEqual(concurrency);
    // Whatever was tried again, each row is in exactly one answer the client took.
    const answered = batches.filter((b) => b.status === 200).flatMap((b) => b.answered!.map((a) => a[ID] as number));
    expect(answered.toSorted((a, b) => a - b)).toEqual(Array.from({ length: rows }, (_, i) => i));
    expect(manifest.counts).toMatchObject({ requests: rows / batchSize, rowsScored: rows, rowsQuarantined: 0 });
    expect(manifest.concurrency).toMatchObject({ asked: concurrency });
  });
});
