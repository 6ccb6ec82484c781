import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DIRECT_DEADLINE_MS } from '../../src/notify/direct-notifier.js';
import { NOTIFICATIONS_QUEUE } from '../../src/queue/queued-notifier.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { SCHEDULES_QUEUE } from '../../src/queue/queues.js';
import { createStorage } from '../../src/storage/storage.js';
import type { ScheduledRunResult } from '../../src/triggers/scheduled-run.js';
import { runCli, startCli } from '../helpers/cli.js';
import { freePort, useQueueFixture, waitFor } from '../helpers/queue.js';
import { mountRunPages } from '../helpers/run-pages.js';
import { rentalsWithSqft, tempDir, writeRentals } from '../helpers/scoring.js';
import { startForeignListener } from '../helpers/foreign-listener.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { folderTree } from '../helpers/folder-tree.js';

const MODEL = 'mindsdb/home_rentals_model';
const SECRET = 'webhook-secret-of-the-test-0123';
let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

const receivers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});
async function receiver(failFirst = 0) {
  const r = await startWebhookReceiver(SECRET, { failFirst });
  receivers.push(r);
  return r;
}

/** The delivery records of a run folder (`notifications/*.json`). */
async function records(folder: string): Promise<Record<string, unknown>[]> {
  const dir = join(folder, 'notifications');
  return Promise.all((await readdir(dir)).map(async (name) => JSON.parse(await readFile(join(dir, name), 'utf8')) as Record<string, unknown>));
}

/** The delivery job `id` once finished, checked to be the only job the notifications queue ever held. */
async function onlyDelivery(notifications: Queue, id: string) {
  const job = await waitFor('the delivery job to complete', async () => {
    const j = await Job.fromId(notifications, id);
    return j?.finishedOn ? j : undefined;
  });
  const counts = await notifications.getJobCounts('waiting', 'delayed', 'active', 'completed', 'failed');
  expect(counts).toEqual({ waiting: 0, delayed: 0, active: 0, completed: 1, failed: 0 });
  return job;
}

describe('webhooks of queued runs', () => {
  const f = useQueueFixture();
  let redis: Redis | undefined;
  afterEach(() => redis?.disconnect());

  /** A jobs folder of the given pipelines, synced to the schedules queue; answers the folder and the queues. */
  async function pipelines(...documents: string[]) {
    await f.setup();
    const dir = await mkdtemp(join(tmp.dir, 'jobs-'));
    await writeFile(join(dir, 'pipelines.yaml'), documents.join('---\n'));
    const sync = await runCli(['schedule', 'sync', '--jobs', dir], f.env());
    expect(sync.code, sync.stderr).toBe(0);
    redis = new Redis(f.redisUrl, { maxRetriesPerRequest: null });
    return {
      dir,
      schedules: new Queue(SCHEDULES_QUEUE, { connection: redis, prefix: f.prefix }),
      notifications: new Queue(NOTIFICATIONS_QUEUE, { connection: redis, prefix: f.prefix }),
    };
  }

  /** Fires a pipeline's scheduler now (its next job promoted) and answers the run it made, once ended. */
  async function fire(schedules: Queue, name: string) {
    const next = (await schedules.getJobSchedulers()).find((s) => s.key === name)!.next;
    const job = (await Job.fromId(schedules, `repeat:${name}:${next}`))!;
    await job.promote();
    const fired = await waitFor(
      'the fired job to complete',
      async () => (await Job.fromId<unknown, ScheduledRunResult>(schedules, job.id!))?.returnvalue,
      30_000,
    );
    return f.finished(fired.runId, 60_000);
  }

  it('a failed scheduled run: its webhook arrives signed within seconds, three attempts of one delivery id, taken once, while the first two fail', async () => {
    const hook = await receiver(2);
    const out = join(tmp.dir, 'failing-out');
    const { dir, schedules, notifications } = await pipelines(
      `name: failing\nmodel: ${MODEL}\ninput: ${join(tmp.dir, 'nowhere', '{date}.csv')}\noutput: ${out}/\nschedule: { cron: "0 3 * * *" }\n` +
        `notify: { urls: ["${hook.url}"], on: [failed] }\n`,
    );
    // Two workers: whichever takes a delivery's attempt, the receiver hears it once.
    const env = { JOBS_DIR: dir, NOTIFY_SECRET: SECRET };
    const workers = [f.worker([], env), f.worker([], env)];
    const status = await fire(schedules, 'failing');
    expect(status).toMatchObject({ state: 'failed', pipeline: 'failing' });
    const ended = Date.parse(status.finishedAt!);

    await waitFor('the delivery to be taken', () => hook.accepted.length === 1, 30_000);
    const [taken] = hook.accepted;
    expect(hook.refused).toEqual([]);
    // Within seconds: attempts about 1 s and then 2 s apart.
    expect(taken.at - ended).toBeLessThan(10_000);
    const job = await onlyDelivery(notifications, taken.id);
    expect(job.attemptsMade).toBe(3);
    expect(job.returnvalue).toEqual({ status: 200 });
    // Three attempts, one id, each to the URL as configured (its query too), taken once.
    expect(hook.requests.map((r) => [r.url, r.headers['x-batch-scorer-delivery']])).toEqual(Array(3).fill(['/hooks/batch?token=receiver-secret', taken.id]));
    expect(hook.duplicates).toEqual([]);
    expect(new Set(hook.requests.map((r) => r.body)).size).toBe(1);
    expect(taken.id).toMatch(new RegExp(`^${status.runId}\\.failed\\.[0-9a-f]{12}$`));
    expect(taken.body).toMatchObject({
      event: 'failed',
      events: ['failed'],
      deliveryId: taken.id,
      runId: status.runId,
      state: 'failed',
      pipeline: 'failing',
      counts: null,
      error: { code: 'E_INPUT_NOT_FOUND' },
      links: { run: null, folder: join(out, status.runId) },
    });
    expect((taken.body.error as { message: string }).message).toMatch(/nowhere\/\d{4}-\d\d-\d\d\.csv: no such file or object/);
    expect(taken.body.text).toMatch(new RegExp(`^batch-scorer: run ${status.runId} \\(pipeline failing\\) failed: \\[E_INPUT_NOT_FOUND\\] `));
    // Refused before it made its folder, the run gets none from its webhook either.
    expect(existsSync(join(out, status.runId))).toBe(false);
    const logs = workers.map((w) => w.log()).join('');
    expect(logs).toContain('webhook not delivered; trying again');
    expect(logs).not.toContain('receiver-secret');
    expect(logs).not.toContain(SECRET);
  });

  it("a completed run is told to NOTIFY_URLS but not to its pipeline's targets that hear only failures; the delivery is recorded in the run folder", async () => {
    const [everyEnd, failuresOnly] = [await receiver(), await receiver()];
    const input = join(tmp.dir, 'fine.csv');
    await writeRentals(input, 25);
    const out = join(tmp.dir, 'fine-out');
    const { dir, schedules, notifications } = await pipelines(
      `name: fine\nmodel: ${MODEL}\ninput: ${input}\noutput: ${out}/\nschedule: { cron: "0 3 * * *" }\nnotify: { urls: ["${failuresOnly.url}"], on: [failed] }\n`,
    );
    f.worker([], { JOBS_DIR: dir, NOTIFY_SECRET: SECRET, NOTIFY_URLS: everyEnd.url, PUBLIC_URL: 'https://scorer.example/' });
    const status = await fire(schedules, 'fine');
    expect(status.state).toBe('succeeded');
    await waitFor('the delivery to be taken', () => everyEnd.accepted.length === 1, 30_000);
    const [taken] = everyEnd.accepted;
    expect(taken.body).toMatchObject({
      event: 'succeeded',
      runId: status.runId,
      state: 'succeeded',
      error: null,
      counts: { rowsIn: 25, rowsScored: 25, rowsQuarantined: 0 },
      links: { run: `https://scorer.example/ui/runs/${status.runId}`, folder: join(out, status.runId) },
    });
    // The run end's deliveries are enqueued together: one job, none for the failures-only target.
    expect((await onlyDelivery(notifications, taken.id)).returnvalue).toEqual({ status: 200 });
    expect(failuresOnly.requests).toEqual([]);
    const folder = join(out, status.runId);
    expect(existsSync(join(folder, '_SUCCESS'))).toBe(true);
    const [record] = await waitFor('the record', () => records(folder).catch(() => undefined));
    expect(record).toMatchObject({
      deliveryId: taken.id,
      events: ['succeeded'],
      target: new URL(everyEnd.url).origin,
      attempts: 1,
      lastStatus: 200,
      lastError: null,
      outcome: 'delivered',
    });
    // The run page lists it.
    const storage = createStorage();
    const app = await mountRunPages(f, storage);
    try {
      const page = (await app.inject({ method: 'GET', url: `/ui/runs/${status.runId}` })).body.replace(/>\s+</g, '><');
      expect(page).toContain(`<section class="card" id="notifications"><h2>Notifications</h2>`);
      expect(page).toContain(
        `<td><code>${taken.id}</code></td><td>succeeded</td><td class="wrap">${new URL(everyEnd.url).origin}</td><td class="num">1</td><td>200</td><td>delivered`,
      );
      expect(page).not.toContain('receiver-secret');
    } finally {
      await app.close();
      storage.close();
    }
  });

  it('a receiver that hangs holds up no other target: the other hears the run end at once, while the hung one is still waited for', async () => {
    await f.setup();
    const hung = await startForeignListener(() => 'hang');
    receivers.push(hung);
    const hook = await receiver();
    const input = join(tmp.dir, 'two-targets.csv');
    await writeRentals(input, 10);
    // The hung target first: one delivery at a time would keep the other waiting for its 10 s timeout.
    f.worker([], { NOTIFY_SECRET: SECRET, NOTIFY_URLS: `${hung.url}/hook,${hook.url}` });
    await f.queue.enqueue({ input, model: MODEL, out: join(tmp.dir, 'two-targets-out'), options: { runId: 'two-targets' } });
    const status = await f.finished('two-targets', 60_000);
    expect(status.state).toBe('succeeded');
    await waitFor('the other target to take the delivery', () => hook.accepted.length === 1, 30_000);
    expect(hook.accepted[0].at - Date.parse(status.finishedAt!)).toBeLessThan(5_000);
    expect(hook.accepted[0].body).toMatchObject({ runId: 'two-targets', event: 'succeeded' });
    // The hung target got its attempt, and has not answered it.
    await waitFor('the hung target to be asked', () => hung.requests.length >= 1, 10_000);
    expect(hung.requests[0].headers['x-batch-scorer-delivery']).not.toBe(hook.accepted[0].id);
  });
});

describe('webhooks of score', () => {
  let sim: Awaited<ReturnType<typeof import('../helpers/scoring.js').startSimulator>>;
  beforeAll(async () => {
    sim = await (await import('../helpers/scoring.js')).startSimulator();
  });
  afterAll(() => sim.close());

  const score = (input: string, out: string, env: Record<string, string>, flags: string[] = []) =>
    startCli(['score', input, '--model', MODEL, '--out', out, '--json', ...flags], { MODEL_SERVICE_URL: sim.url, NOTIFY_SECRET: SECRET, ...env });

  it('delivers a completed run before it exits, after two failed attempts, and records it', async () => {
    const hook = await receiver(2);
    const input = join(tmp.dir, 'score.csv');
    await writeRentals(input, 40);
    const out = join(tmp.dir, 'score-out');
    const cli = score(input, out, { NOTIFY_URLS: hook.url });
    expect(await cli.exited, cli.stderr()).toBe(0);
    const line = JSON.parse(cli.stdout()) as { runId: string; state: string };
    expect(line.state).toBe('succeeded');
    expect(hook.requests).toHaveLength(3);
    expect(hook.refused).toEqual([]);
    expect(hook.accepted).toHaveLength(1);
    expect(hook.accepted[0].body).toMatchObject({
      event: 'succeeded',
      runId: line.runId,
      pipeline: null,
      trigger: 'cli (score)',
      counts: { rowsIn: 40, rowsScored: 40, rowsQuarantined: 0 },
      links: { run: null, folder: join(out, line.runId) },
    });
    expect(await records(join(out, line.runId))).toEqual([
      expect.objectContaining({ deliveryId: hook.accepted[0].id, attempts: 3, lastStatus: 200, outcome: 'delivered' }),
    ]);
  });

  it('a refused re-run of a succeeded run is no run: no webhook, and the succeeded folder stays byte-identical', async () => {
    const hook = await receiver(0);
    const input = join(tmp.dir, 'once.csv');
    await writeRentals(input, 20);
    const out = join(tmp.dir, 'once-out');
    const first = score(input, out, { NOTIFY_URLS: hook.url }, ['--run-id', 'once']);
    expect(await first.exited, first.stderr()).toBe(0);
    expect(hook.accepted).toHaveLength(1);
    const folder = join(out, 'once');
    const before = await folderTree(folder);
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['_SUCCESS', 'manifest.json', 'predictions.csv']));

    const again = score(input, out, { NOTIFY_URLS: hook.url }, ['--run-id', 'once']);
    expect(await again.exited).toBe(2);
    expect(again.stderr()).toContain('[E_RUN_EXISTS]');
    expect(hook.requests).toHaveLength(1);
    expect(await folderTree(folder)).toEqual(before);
  });

  it('a receiver that is down: the run still exits 0, within the delivery bound of its end, the delivery given up and recorded', async () => {
    const input = join(tmp.dir, 'down.csv');
    await writeRentals(input, 10);
    const out = join(tmp.dir, 'down-out');
    const cli = score(input, out, { NOTIFY_URLS: `http://127.0.0.1:${await freePort()}/hook` });
    expect(await cli.exited, cli.stderr()).toBe(0);
    const exitedAt = Date.now();
    const line = JSON.parse(cli.stdout()) as { runId: string; state: string };
    expect(line.state).toBe('succeeded');
    const folder = join(out, line.runId);
    const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
    // Three attempts refused at once, about 1 s and 2 s apart (half of each random): 1.5 to 3 s after the run's end, never past the bound.
    const after = exitedAt - Date.parse(manifest.finishedAt);
    expect(after).toBeGreaterThanOrEqual(1_500);
    expect(after).toBeLessThan(DIRECT_DEADLINE_MS);
    expect(await records(folder)).toEqual([expect.objectContaining({ attempts: 3, lastStatus: null, lastError: 'ECONNREFUSED', outcome: 'gave-up' })]);
    expect(cli.stderr()).toContain('webhook not delivered; given up');
  });

  it('a run that fails on its drift is one delivery of both events', async () => {
    const hook = await receiver();
    const base = join(tmp.dir, 'base.csv');
    const shifted = join(tmp.dir, 'shifted.csv');
    await writeFile(base, rentalsWithSqft(2_000));
    await writeFile(
      shifted,
      rentalsWithSqft(2_000, (v) => Math.round(v * 1.5)),
    );
    const out = join(tmp.dir, 'drift-out');
    expect(await score(base, out, {}, ['--run-id', 'base']).exited).toBe(0);
    const cli = score(shifted, out, { NOTIFY_URLS: hook.url }, ['--run-id', 'shifted', '--baseline-run', 'base', '--drift-fail', '0.25']);
    expect(await cli.exited).toBe(1);
    expect(hook.requests).toHaveLength(1);
    expect(hook.accepted[0].body).toMatchObject({
      event: 'held',
      events: ['held', 'drift'],
      runId: 'shifted',
      state: 'held',
      error: { code: 'E_DRIFT' },
      drift: { level: 'fail' },
    });
  });
});

describe('pipelines check', () => {
  it('prints webhook targets as their origins: their paths and queries may hold a token', async () => {
    const dir = await mkdtemp(join(tmp.dir, 'jobs-check-'));
    const target = 'https://hooks.slack.example/services/T000/B000/slack-token-xyz?key=query-token';
    await writeFile(
      join(dir, 'pipelines.yaml'),
      `name: told\nmodel: ${MODEL}\ninput: ${join(tmp.dir, '{date}.csv')}\noutput: ${tmp.dir}/out/\nschedule: { cron: "0 3 * * *" }\nnotify: { urls: ["${target}"] }\n`,
    );
    const json = await runCli(['pipelines', 'check', '--jobs', dir, '--json'], {});
    expect(json.code, json.stderr).toBe(0);
    const [told] = JSON.parse(json.stdout) as { notify: { urls: string[] } }[];
    expect(told.notify.urls).toEqual(['https://hooks.slack.example']);
    const text = await runCli(['pipelines', 'check', '--jobs', dir], {});
    expect(text.code, text.stderr).toBe(0);
    for (const out of [json.stdout, json.stderr, text.stdout, text.stderr]) expect(out).not.toMatch(/slack-token|query-token/);
  });
});
