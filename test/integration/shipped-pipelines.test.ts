import { fileURLToPath } from 'node:url';
import { Job, Queue } from 'bullmq';
import { CronExpressionParser } from 'cron-parser';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manifestSchema } from '../../src/scoring/manifest.js';
import { SCHEDULES_QUEUE } from '../../src/queue/queues.js';
import { rentalsCsv } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';

/** The example pipelines that ship in jobs/, exactly as a user finds them. */
const SHIPPED = fileURLToPath(new URL('../../jobs', import.meta.url));

let s3: S3Server;
let storage: Storage;
beforeAll(async () => {
  // The buckets jobs/rentals.yaml names (the compose stack creates the same).
  s3 = await startS3Server(['data', 'inbox', 'results']);
  storage = createStorage(s3.settings);
});
afterAll(async () => {
  storage.close();
  await s3.close();
});

const f = useQueueFixture();
let redis: Redis | undefined;
let schedules: Queue | undefined;
afterEach(async () => {
  await schedules?.close();
  redis?.disconnect();
  schedules = undefined;
});

const env = () => ({
  ...f.env(),
  S3_ENDPOINT: s3.endpoint,
  S3_FORCE_PATH_STYLE: 'true',
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  JOBS_DIR: SHIPPED,
});

/** A finished run's manifest, read from the pipeline's output with the pipeline's schema, once `_SUCCESS` is there. */
async function succeeded(folder: string) {
  expect(await storage.exists(parseLocation(`${folder}/_SUCCESS`))).toBe(true);
  return manifestSchema.parse(JSON.parse(await storage.readText(parseLocation(`${folder}/manifest.json`))));
}

describe('the example pipelines in jobs/', () => {
  it('pipelines check accepts them and lists both', async () => {
    const r = await runCli(['pipelines', 'check'], { JOBS_DIR: SHIPPED });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('nightly-rentals  schedule "0 2 * * *" Europe/Paris  input s3://data/rentals/{date-1d}.csv');
    expect(r.stdout).toContain('rentals-inbox  files s3://inbox/rentals/*.csv');
    expect(r.stderr).toContain(`2 pipeline(s) in ${SHIPPED}: valid`);
  });

  it('rentals-inbox: a CSV dropped under s3://inbox/rentals/ is found by watch and scored into s3://results/inbox/, with its options', async () => {
    await f.setup();
    f.worker([], env());
    await storage.write(parseLocation('s3://inbox/rentals/2026-11-23.csv'), rentalsCsv(500));
    await storage.write(parseLocation('s3://inbox/rentals/notes.txt'), 'not a CSV');
    const r = await runCli(['watch', '--once'], env());
    expect(r.code).toBe(0);
    const [runId, ...others] = r.stdout.trim().split('\n');
    expect(others).toEqual([]);
    expect(runId).toMatch(/^rentals-inbox-\d{8}-[0-9a-f]{12}$/);
    expect(await f.finished(runId)).toMatchObject({ state: 'succeeded', pipeline: 'rentals-inbox' });
    const manifest = await succeeded(`s3://results/inbox/${runId}`);
    expect(manifest).toMatchObject({
      input: { location: 's3://inbox/rentals/2026-11-23.csv', rows: 500 },
      trigger: { kind: 'poll', pipeline: 'rentals-inbox', object: { location: 's3://inbox/rentals/2026-11-23.csv' } },
      counts: { rowsScored: 500 },
    });
    expect(manifest.options).toMatchObject({ maxErrorRate: 0.05 });
    // Seen again, the same file starts nothing.
    expect(await runCli(['watch', '--once'], env())).toMatchObject({ code: 0, stdout: '' });
  });

  it("nightly-rentals: synced, listed with its next 02:00 in Paris, and fired through BullMQ's clock, it scores the day before's export", async () => {
    await f.setup();
    const sync = await runCli(['schedule', 'sync'], env());
    expect(sync.code).toBe(0);
    const next = CronExpressionParser.parse('0 2 * * *', { tz: 'Europe/Paris', currentDate: new Date() }).next().toDate();
    expect(sync.stdout.trim()).toBe(`added      nightly-rentals  "0 2 * * *" Europe/Paris  next ${next.toISOString()}`);
    const list = await runCli(['schedule', 'list', '--json'], env());
    expect(JSON.parse(list.stdout)).toMatchObject([{ id: 'nightly-rentals', cron: '0 2 * * *', tz: 'Europe/Paris', next: next.toISOString() }]);

    // The export the firing will look for: the day before the fire time, on Paris's calendar.
    // 02:00 in Paris less a day is still the day before on Paris's calendar, whatever the clocks do.
    const dayBefore = new Date(next.getTime() - 24 * 3600 * 1000).toLocaleDateString('en-CA', { timeZone: 'Europe/Paris' });
    const input = `s3://data/rentals/${dayBefore}.csv`;
    await storage.write(parseLocation(input), rentalsCsv(300));
    redis = new Redis(f.redisUrl, { maxRetriesPerRequest: null });
    schedules = new Queue(SCHEDULES_QUEUE, { connection: redis, prefix: f.prefix });
    // Fired now instead of at 02:00: the scheduler's next job promoted.
    await (await Job.fromId(schedules, `repeat:nightly-rentals:${next.getTime()}`))!.promote();
    f.worker([], env());
    const runs = await waitFor('the scheduled run', async () => {
      const found = await f.queue.list({ pipeline: 'nightly-rentals' });
      return found.length > 0 && found;
    });
    const runId = `nightly-rentals-${next.toISOString().slice(0, 16).replace(/[-:]/g, '')}Z`;
    expect(runs.map((r) => r.runId)).toEqual([runId]);
    expect(await f.finished(runId)).toMatchObject({ state: 'succeeded' });
    const manifest = await succeeded(`s3://results/nightly/${runId}`);
    expect(manifest).toMatchObject({
      input: { location: input, rows: 300 },
      trigger: { kind: 'schedule', pipeline: 'nightly-rentals', fireTime: next.toISOString(), cron: '0 2 * * *', tz: 'Europe/Paris' },
    });
    expect(manifest.options).toMatchObject({ batchSize: 1000, concurrency: 4 });
  });
});
