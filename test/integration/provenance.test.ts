// What started a run, as the run API and `status` show it and filter by: runs enqueued with the
// triggers a schedule, an S3 event and the command line give them, on real Redis, read through a
// real `serve` and the built CLI.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunTrigger } from '../../src/scoring/run-trigger.js';
import type { RunStatus } from '../../src/queue/producer.js';
import { runCli, startCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { tempDir, writeRentals } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-5c1e9a7b3d2f4608';
const bearer = { authorization: `Bearer ${TOKEN}` };
const MODEL = 'mindsdb/home_rentals_model';

const SCHEDULE: RunTrigger = { kind: 'schedule', pipeline: 'nightly-rentals', fireTime: '2026-11-23T01:00:00.000Z', cron: '0 2 * * *', tz: 'Europe/Paris' };
const eventFor = (n: number): RunTrigger => ({
  kind: 'event',
  pipeline: 'rentals-inbox',
  object: { location: `s3://inbox/rentals/file ${n}.csv`, etag: `etag${n}`, versionId: `v${n}`, size: 100 },
  eventName: 's3:ObjectCreated:Put',
  eventTime: '2026-11-23T09:30:00.000Z',
});
const CLI_TRIGGER: RunTrigger = { kind: 'cli', command: 'enqueue' };

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, 200);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

/** Enqueues a run as a trigger does (a run that ended is kept, never resumed). */
function enqueue(runId: string, trigger: RunTrigger) {
  return f.queue.enqueue({ input, model: MODEL, out: join(tmp.dir, 'out'), options: { runId, segmentRows: 100 }, trigger }, { ifEnded: 'keep' });
}

async function getJson(url: string) {
  const res = await fetch(url, { headers: bearer });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('provenance', () => {
  it('GET /runs?pipeline= answers that pipeline’s runs only, every run answers its trigger and pipeline, and OpenAPI shows both', async () => {
    await f.setup();
    await enqueue('by-schedule', SCHEDULE);
    await enqueue('by-event', eventFor(1));
    await enqueue('by-cli', CLI_TRIGGER);
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const ids = async (query: string) => ((await getJson(`${s.url}/runs${query}`)).json.runs as RunStatus[]).map((r) => r.runId).sort();

    const all = (await getJson(`${s.url}/runs`)).json.runs as RunStatus[];
    expect(Object.fromEntries(all.map((r) => [r.runId, [r.trigger, r.pipeline]]))).toEqual({
      'by-schedule': [SCHEDULE, 'nightly-rentals'],
      'by-event': [eventFor(1), 'rentals-inbox'],
      'by-cli': [CLI_TRIGGER, undefined],
    });
    expect(await ids('?pipeline=nightly-rentals')).toEqual(['by-schedule']);
    expect(await ids('?pipeline=rentals-inbox&state=waiting')).toEqual(['by-event']);
    expect(await ids('?pipeline=rentals-inbox&state=completed')).toEqual([]);
    expect(await ids('?pipeline=no-such-pipeline')).toEqual([]);
    expect(await getJson(`${s.url}/runs/by-event`)).toMatchObject({
      status: 200,
      json: { runId: 'by-event', trigger: eventFor(1), pipeline: 'rentals-inbox' },
    });

    const bad = await getJson(`${s.url}/runs?pipeline=${encodeURIComponent('no spaces!')}`);
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: 'E_USAGE', issues: [{ field: 'pipeline' }] });

    const openApi = (await getJson(`${s.url}/openapi.json`)).json as {
      components: { schemas: { RunStatus: { properties: Record<string, { anyOf?: unknown[]; oneOf?: unknown[] }> } } };
      paths: { '/runs': { get: { parameters: { name: string }[] } } };
    };
    const properties = openApi.components.schemas.RunStatus.properties;
    expect(properties.pipeline).toMatchObject({ type: 'string' });
    // One shape per kind of trigger: cli, api, schedule, event, poll.
    expect((properties.trigger.oneOf ?? properties.trigger.anyOf)?.length).toBe(5);
    expect(openApi.paths['/runs'].get.parameters.map((p) => p.name)).toEqual(expect.arrayContaining(['state', 'pipeline', 'limit']));
  });

  it('status shows what started each run, and --pipeline lists that pipeline’s 20 latest, however many newer runs others have', async () => {
    await f.setup();
    await enqueue('by-schedule', SCHEDULE);
    for (let n = 0; n < 22; n++) await enqueue(`by-event-${String(n).padStart(2, '0')}`, eventFor(n));
    await enqueue('by-cli', CLI_TRIGGER);

    const scheduled = await runCli(['status', '--pipeline', 'nightly-rentals'], f.env());
    expect(scheduled.code).toBe(0);
    expect(scheduled.stdout).toBe(
      `by-schedule  queued  -  attempts 0  by schedule nightly-rentals (2026-11-23T01:00:00.000Z)  ${join(tmp.dir, 'out', 'by-schedule')}\n`,
    );

    const events = (await runCli(['status', '--pipeline', 'rentals-inbox'], f.env())).stdout.trimEnd().split('\n');
    expect(events).toHaveLength(20);
    for (const line of events)
      expect(line).toMatch(/^by-event-\d\d {2}queued .* by event rentals-inbox \(s3:ObjectCreated:Put s3:\/\/inbox\/rentals\/file \d+\.csv\)/);
    expect((await runCli(['status'], f.env())).stdout).toContain('by-cli  queued  -  attempts 0  by cli (enqueue)  ');

    const json = JSON.parse((await runCli(['status', '--pipeline', 'nightly-rentals', '--json'], f.env())).stdout) as RunStatus[];
    expect(json).toMatchObject([{ runId: 'by-schedule', trigger: SCHEDULE, pipeline: 'nightly-rentals' }]);
    expect((await runCli(['status', '--pipeline', 'no-such-pipeline'], f.env())).stdout).toBe('no runs of pipeline no-such-pipeline\n');

    const both = await runCli(['status', 'by-schedule', '--pipeline', 'nightly-rentals'], f.env());
    expect([both.code, both.stderr]).toEqual([
      2,
      expect.stringMatching(/--pipeline filters the latest runs; leave it out to show run by-schedule \[E_USAGE\]/),
    ]);
    const bad = await runCli(['status', '--pipeline', 'no spaces!'], f.env());
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--pipeline: use letters, digits.*got "no spaces!".*\[E_USAGE\]/)]);
  });

  it('status --pipeline --watch follows that pipeline’s runs until they end, showing no other', async () => {
    await f.setup();
    await enqueue('by-schedule', SCHEDULE);
    await enqueue('by-event', eventFor(1));
    const watch = startCli(['status', '--pipeline', 'nightly-rentals', '--watch'], f.env());
    f.worker();
    expect(await watch.exited).toBe(0);
    const frames = watch.stdout().trimEnd().split('\n');
    expect(frames.at(-1)).toMatch(/^by-schedule {2}succeeded {2}200\/200 rows .* by schedule nightly-rentals \(/);
    for (const frame of frames) expect(frame).toMatch(/^by-schedule /);
  });

  it("RunQueue.list({ pipeline }) answers the pipeline's newest runs first whatever their states, and forgets runs the queue removed", async () => {
    await f.setup();
    const { Queue, UnrecoverableError, Worker } = await import('bullmq');
    const { Redis } = await import('ioredis');
    const redis = new Redis(f.redisUrl, { maxRetriesPerRequest: null });
    const runs = new Queue('runs', { connection: redis, prefix: f.prefix });
    const id = (i: number) => `inbox-${String(i).padStart(2, '0')}`;
    try {
      // The oldest ten of the inbox's runs fail (a stand-in worker refuses them), and so sit where
      // BullMQ lists failed jobs, apart from the waiting ones; another pipeline's runs in between.
      for (let i = 0; i < 10; i++) await enqueue(id(i), eventFor(i));
      const refuser = new Worker('runs', () => Promise.reject(new UnrecoverableError('refused for the test')), {
        connection: redis.duplicate(),
        prefix: f.prefix,
      });
      await waitFor('ten failed runs', async () => (await runs.getFailedCount()) === 10);
      await refuser.close();
      for (let i = 10; i < 30; i++) {
        await enqueue(id(i), eventFor(i));
        await enqueue(`other-${i}`, { ...SCHEDULE, pipeline: 'other', fireTime: new Date(Date.UTC(2026, 0, 1, i)).toISOString() });
      }
      const newest = (await f.queue.list({ pipeline: 'rentals-inbox', limit: 5 })).map((r) => r.runId);
      expect(newest).toEqual([29, 28, 27, 26, 25].map(id));
      const failed = (await f.queue.list({ pipeline: 'rentals-inbox', state: 'failed', limit: 3 })).map((r) => r.runId);
      expect(failed).toEqual([9, 8, 7].map(id));
      // Removed from the queue (as retention does): not listed, and dropped from the index.
      await runs.remove(id(29));
      await runs.remove(id(27));
      expect((await f.queue.list({ pipeline: 'rentals-inbox', limit: 3 })).map((r) => r.runId)).toEqual([28, 26, 25].map(id));
      expect(await redis.zcard(`${f.prefix}:pipeline-runs:rentals-inbox`)).toBe(28);
      expect(await f.queue.list({ pipeline: 'rentals-inbox', limit: 100 })).toHaveLength(28);
    } finally {
      await runs.close();
      redis.disconnect();
    }
  });
});
