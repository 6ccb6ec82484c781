import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { predictExchanges, useRecordingProxy } from './recording-proxy.js';
import { scoreCli } from './score-cli.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 20_000;
let tmp: Awaited<ReturnType<typeof tempDir>>;
const proxy = useRecordingProxy(conn.url);

beforeAll(async () => {
  tmp = await tempDir();
  await writeFile(join(tmp.dir, 'rentals.csv'), rentalsText(ROWS));
});
afterAll(() => tmp.cleanup());

/** A printed range, `<name>: E (low L, high H)`. */
function printedRange(stdout: string, name: string): { low: number; expected: number; high: number } {
  const m = new RegExp(`^${name}: (\\d+) \\(low (\\d+), high (\\d+)\\)$`, 'm').exec(stdout);
  expect(m, `"${name}" in:\n${stdout}`).not.toBeNull();
  const [expected, low, high] = m!.slice(1).map(Number);
  return { low, expected, high };
}

/** The predict exchanges of one CLI run through the proxy, planning's probe left out, and their body bytes. */
function sentBy(from: number): { requests: number; bytes: number } {
  const [probe, ...batches] = predictExchanges(proxy.exchanges.slice(from));
  expect(probe.sent).toHaveLength(1);
  return { requests: batches.length, bytes: batches.reduce((n, b) => n + b.bytes, 0) };
}

describe('a dry run’s estimate against the real run on a real MindsDB', () => {
  // Batches cut by bytes, so the requests depend on the rows' sizes; row ids of 1 to 5 digits; one segment, then several.
  it.each([
    ['one segment', ['--batch-size', '200', '--max-batch-bytes', '16000']],
    ['several segments', ['--batch-size', '300', '--max-batch-bytes', '40000', '--segment-rows', '3000']],
  ])('%s: the real requests and bytes fall inside the printed ranges', async (name, flags) => {
    const runId = name.replace(' ', '-');
    const call = { input: join(tmp.dir, 'rentals.csv'), model: 'mindsdb/home_rentals_model', service: proxy.url, out: join(tmp.dir, 'out'), runId };

    const before = proxy.exchanges.length;
    const dry = await scoreCli({ ...call, flags: [...flags, '--dry-run'] });
    expect(dry.code, dry.stderr).toBe(0);
    expect(existsSync(dry.folder)).toBe(false);
    const requests = printedRange(dry.stdout, 'requests');
    const bytes = printedRange(dry.stdout, 'bytes sent');
    // The canary: 8 batches after the probe.
    expect(sentBy(before).requests).toBe(8);

    const between = proxy.exchanges.length;
    const real = await scoreCli({ ...call, flags });
    expect(real.code, real.stderr).toBe(0);
    const sent = sentBy(between);
    const where = `real ${JSON.stringify(sent)}; printed requests ${JSON.stringify(requests)}, bytes ${JSON.stringify(bytes)}`;
    expect(sent.requests, where).toBeGreaterThanOrEqual(requests.low);
    expect(sent.requests, where).toBeLessThanOrEqual(requests.high);
    expect(sent.bytes, where).toBeGreaterThanOrEqual(bytes.low);
    expect(sent.bytes, where).toBeLessThanOrEqual(bytes.high);
    const manifest = JSON.parse(await readFile(join(real.folder, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.counts).toMatchObject({ requests: sent.requests, retries: 0, rowsScored: ROWS });
  });
});
