import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescribeSnapshot } from '../../src/scoring/describe-snapshot.js';
import type { Simulator } from '../../src/simulator/server.js';
import { rentalsCsv } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli } from '../helpers/cli.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { expectedRental, parseCsv, score, startSimulator, tempDir } from '../helpers/scoring.js';

const ROWS = 20_000;
let sim: Simulator;
let s3: S3Server;
let storage: Storage;
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  sim = await startSimulator();
  s3 = await startS3Server(['data', 'results']);
  storage = createStorage(s3.settings);
  tmp = await tempDir();
  await storage.write(parseLocation('s3://data/in/rentals.csv'), rentalsCsv(ROWS));
});
afterAll(async () => {
  storage.close();
  await Promise.all([sim.close(), s3.close(), tmp.cleanup()]);
});

const read = async (loc: string) => text(await storage.read(parseLocation(loc)));
const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describe('score with S3 input and output (s3rver)', () => {
  it('streams an S3 object in ranged segments into an S3 run folder, identical to a local run', async () => {
    const m = await score('s3://data/in/rentals.csv', 's3://results/runs', { service: sim.url, s3: s3.settings, runId: 's3', segmentRows: 3_000 });
    expect(m.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS, segments: 7 });
    expect(m.input.etag).toBeTruthy();
    const predictions = await read('s3://results/runs/s3/predictions.csv');
    const rows = parseCsv(predictions);
    expect(rows).toHaveLength(ROWS);
    rows.forEach((r, i) => {
      expect(r.listing_id).toBe(`L${String(i).padStart(8, '0')}`);
      expect(Number(r.rental_price)).toBe(expectedRental(r).rental_price);
    });
    expect(m.outputs[0].sha256).toBe(sha256(predictions));
    expect(JSON.parse(await read('s3://results/runs/s3/manifest.json'))).toMatchObject({
      state: 'succeeded',
      input: { location: 's3://data/in/rentals.csv', rows: ROWS },
    });
    expect((JSON.parse(await read('s3://results/runs/s3/describe.json')) as DescribeSnapshot).answers).toHaveLength(2);
    expect(await storage.exists(parseLocation('s3://results/runs/s3/_SUCCESS'))).toBe(true);
    const leftovers = [];
    for await (const o of storage.list(parseLocation('s3://results/runs/s3/_work'))) leftovers.push(o);
    expect(leftovers).toEqual([]);

    const local = join(tmp.dir, 'local.csv');
    await storage.write(parseLocation(local), await storage.read(parseLocation('s3://data/in/rentals.csv')));
    await score(local, join(tmp.dir, 'out'), { service: sim.url, runId: 'local', segmentRows: 3_000 });
    expect(sha256(await readFile(join(tmp.dir, 'out', 'local', 'predictions.csv')))).toBe(sha256(predictions));
  });

  it('the CLI reads S3 settings from the environment, and a missing object exits 2', async () => {
    const env = {
      MODEL_SERVICE_URL: sim.url,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
    const ok = await runCli(
      ['score', 's3://data/in/rentals.csv', '--model', 'mindsdb/home_rentals_model', '--out', 's3://results/cli', '--run-id', 'c', '--limit', '100', '--json'],
      env,
    );
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ state: 'succeeded', rowsScored: 100, folder: 's3://results/cli/c' });
    expect(ok.stderr).not.toContain('S3RVER');
    const missing = await runCli(['score', 's3://data/in/nope.csv', '--model', 'mindsdb/home_rentals_model', '--out', 's3://results/cli'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('s3://data/in/nope.csv');
  });
});
