import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceClientFactory } from '../../src/app/service-clients.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import { silentLogger } from '../../src/log.js';
import { rescoreRun } from '../../src/scoring/rescore.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import type { Simulator } from '../../src/simulator/server.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { rentalsText, score, startSimulator } from '../helpers/scoring.js';

// A run folder on S3 is patched as a local one is: its files checked and read by S3 reads, the
// rows file read by ranges, the new version written beside it.

const ROWS = 600;
const isBad = (i: number) => i % 100 === 13;
let sim: Simulator;
let s3: S3Server;
let storage: Storage;

beforeAll(async () => {
  [sim, s3] = await Promise.all([startSimulator(), startS3Server(['data', 'results'])]);
  storage = createStorage(s3.settings);
});
afterAll(async () => {
  storage.close();
  await Promise.all([sim.close(), s3.close()]);
});

const read = async (loc: string) => text(await storage.read(parseLocation(loc)));

describe('rescore on S3', () => {
  it('writes the version of an S3 run folder from a --rows copy on S3, equal to a run of the corrected file', async () => {
    const edit = (fix: boolean) => (row: Record<string, string>, i: number) => void (isBad(i) && (row.location = fix ? 'good' : ENGINE_ERROR_VALUE));
    await storage.write(parseLocation('s3://data/rentals.csv'), rentalsText(ROWS, edit(false)));
    await storage.write(parseLocation('s3://data/corrected.csv'), rentalsText(ROWS, edit(true)));
    const options = { service: sim.url, s3: s3.settings, segmentRows: 200, compress: 'gzip' as const };
    const run = await score('s3://data/rentals.csv', 's3://results/runs', { ...options, runId: 'run' });
    expect(run.counts?.rowsQuarantined).toBe(6);
    const errors = await read('s3://results/runs/run/errors.jsonl');
    await storage.write(parseLocation('s3://data/fixed.jsonl'), errors.replaceAll(`"location":"${ENGINE_ERROR_VALUE}"`, '"location":"good"'));

    const before = sim.stats.predictRowsReceived;
    const manifest = await rescoreRun(
      { runId: 'run', out: 's3://results/runs', rows: 's3://data/fixed.jsonl' },
      { storage, log: silentLogger, predictorFor: serviceClientFactory(new Map(), DEFAULT_LIMITS), limits: DEFAULT_LIMITS },
    );
    expect(sim.stats.predictRowsReceived - before).toBe(6);
    expect(manifest).toMatchObject({
      runId: 'run.rescore-1',
      folder: 's3://results/runs/run.rescore-1',
      patches: { runId: 'run', rows: '--rows s3://data/fixed.jsonl' },
    });

    const reference = await score('s3://data/corrected.csv', 's3://results/runs', { ...options, runId: 'corrected' });
    const sha = (m: typeof manifest) => m.outputs.map((o) => [o.file, o.sha256]);
    expect(sha(manifest)).toEqual(sha(reference));
    expect(await storage.exists(parseLocation('s3://results/runs/run.rescore-1/_SUCCESS'))).toBe(true);
    const work = [];
    for await (const file of storage.list(parseLocation('s3://results/runs/run.rescore-1/_work'))) work.push(file);
    expect(work).toEqual([]);
  });
});
