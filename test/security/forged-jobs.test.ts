// Forged jobs on every queue, added with BullMQ directly as anyone who can write to Redis could,
// against a real worker process with the whole deployment set: roots, allowed services, webhook
// targets and secret, lineage, and a jobs folder of a scheduled and a file-drop pipeline. A foreign
// listener stands for the host a forger would send to: it hears nothing. The configured webhook
// targets and the lineage server hear only the runs the settings allow, and every file under the
// roots is byte for byte as it was (a succeeded run's manifest.json included).
import { mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Job, Queue, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTIFICATIONS_QUEUE } from '../../src/queue/queued-notifier.js';
import { targetName } from '../../src/notify/target-name.js';
import { sealedDelivery, type DeliveryJob } from '../../src/notify/webhook-delivery.js';
import { RunQueue, type RunStatus } from '../../src/queue/producer.js';
import { RUNS_QUEUE, SCHEDULES_QUEUE, SEGMENTS_QUEUE } from '../../src/queue/queues.js';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { folderTree } from '../helpers/folder-tree.js';
import { startForeignListener, type ForeignListener } from '../helpers/foreign-listener.js';
import { startLineageReceiver, type LineageReceiver } from '../helpers/lineage-receiver.js';
import { dropPrefix, REDIS_URL, startWorkerProcess, uniquePrefix, waitFor, type WorkerProcess, reasonOf } from '../helpers/queue.js';
import { writeRentals } from '../helpers/scoring.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

const MODEL = 'mindsdb/home_rentals_model';
const SECRET = 'forged-jobs-notify-secret-7d3a9c1e';
/** Text a forger wants signed: no request anyone receives may carry it. */
const FORGED_TEXT = 'pay-invoice-4242-to-account-of-the-forger';
/** Where the runs this test starts itself write: the one part of the output root that may change. */
const ALLOWED = 'allowed';
/** The fire time forged schedule jobs claim: 2026-01-01 03:00 UTC. */
const FIRE_MILLIS = Date.UTC(2026, 0, 1, 3);

let base = '';
const dirs = { in: '', out: '', private: '', elsewhere: '', jobs: '' };
let rentals = '';
let sim: Simulator;
let foreign: ForeignListener;
let hook: Awaited<ReturnType<typeof startWebhookReceiver>>;
let pipelineHook: Awaited<ReturnType<typeof startWebhookReceiver>>;
let lineage: LineageReceiver;
let prefix = '';
let queue: RunQueue;
let redis: Redis;
let worker: WorkerProcess;
let env: Record<string, string> = {};
/** The runs the settings allow to be told: the run this test starts, a pipeline's run as declared, and the sentinels. */
const allowed = new Set<string>(['good']);
let outBefore: Record<string, string> = {};
let inBefore: Record<string, string> = {};

const queueOf = (name: string) => new Queue(name, { connection: redis, prefix });
const goodFolder = () => join(dirs.out, 'good');

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'forged-')));
  for (const [name, path] of Object.entries({ in: 'roots/in', out: 'roots/out', private: 'private', elsewhere: 'elsewhere', jobs: 'jobs' })) {
    dirs[name as keyof typeof dirs] = join(base, path);
    await mkdir(join(base, path), { recursive: true });
  }
  rentals = join(dirs.in, 'rentals.csv');
  await writeRentals(rentals, 30);
  await writeRentals(join(dirs.private, 'customers.csv'), 10);
  // A file dropped for the file-drop pipeline: only a run `watch` starts for it may read it.
  await mkdir(join(dirs.in, 'drops'));
  await writeRentals(join(dirs.in, 'drops', 'new.csv'), 10);
  sim = await createSimulator({ port: 0 });
  foreign = await startForeignListener(() => 200);
  hook = await startWebhookReceiver(SECRET);
  pipelineHook = await startWebhookReceiver(SECRET);
  lineage = await startLineageReceiver();
  await writeFile(
    join(dirs.jobs, 'pipelines.yaml'),
    [
      `name: nightly\nmodel: ${MODEL}\ninput: ${dirs.in}/nightly/{date}.csv\noutput: ${dirs.out}/nightly/\nschedule: { cron: "0 3 1 1 *" }\n` +
        `notify: { urls: ["${pipelineHook.url}"], on: [failed] }\n`,
      `name: drops\nmodel: ${MODEL}\ntrigger: { prefix: ${dirs.in}/drops/, suffix: .csv }\noutput: ${dirs.out}/drops/\n`,
    ].join('---\n'),
  );
  prefix = uniquePrefix();
  queue = new RunQueue({ redisUrl: REDIS_URL, prefix });
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  env = {
    REDIS_URL,
    QUEUE_PREFIX: prefix,
    MODEL_SERVICE_URL: sim.url,
    INPUT_ROOTS: dirs.in,
    OUTPUT_ROOTS: dirs.out,
    SERVICE_URLS: sim.url,
    NOTIFY_URLS: hook.url,
    NOTIFY_SECRET: SECRET,
    OPENLINEAGE_URL: lineage.url,
    JOBS_DIR: dirs.jobs,
  };
  worker = startWorkerProcess(env, ['--lock-duration', '2000']);
  // A run that succeeded, told to its webhook target (the delivery recorded in its folder) and the lineage server.
  await queue.enqueue({ input: rentals, model: MODEL, out: dirs.out, options: { runId: 'good' } });
  expect((await finished('good')).state).toBe('succeeded');
  await waitFor('the delivery of good to be recorded', () => hook.accepted.length === 1 && stat(join(goodFolder(), 'notifications')).catch(() => false));
  // The record is written to a temporary name and renamed: only the renamed file, saying
  // delivered, is the state every test below compares the run folders with.
  await waitFor('its record to say delivered', async () => {
    const names = Object.keys(await folderTree(join(goodFolder(), 'notifications')));
    if (names.length !== 1 || !names[0].endsWith('.json')) return false;
    const record = JSON.parse(await readFile(join(goodFolder(), 'notifications', names[0]), 'utf8')) as { outcome?: string };
    return record.outcome === 'delivered';
  });
  outBefore = await folderTree(dirs.out);
  inBefore = await folderTree(dirs.in);
}, 60_000);

afterAll(async () => {
  if (worker && worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
  await worker?.exited;
  await queue?.close();
  redis?.disconnect();
  await Promise.all([sim?.close(), foreign?.close(), hook?.close(), pipelineHook?.close(), lineage?.close()]);
  if (prefix) await dropPrefix(prefix);
  if (base) await rm(base, { recursive: true, force: true });
});

function finished(runId: string): Promise<RunStatus> {
  return waitFor(
    `run ${runId} to end`,
    async () => {
      const s = await queue.get(runId);
      return s && (s.state === 'succeeded' || s.state === 'failed') ? s : undefined;
    },
    30_000,
  );
}

/** The job once it has failed (its state first: a job read before its move to failed lacks failedReason). */
async function failedJob(q: Queue, id: string): Promise<Job> {
  return waitFor(`job ${id} of ${q.name} to fail`, async () => ((await q.getJobState(id)) === 'failed' ? Job.fromId(q, id) : undefined), 30_000);
}

/** Adds each job and checks it fails at once (one attempt), for the reason given. */
async function expectRefused(q: Queue, forged: [id: string, data: unknown, reason: RegExp, opts?: JobsOptions][]): Promise<void> {
  for (const [id, data, , opts] of forged) await q.add('forged', data, { jobId: id, attempts: 5, ...opts });
  for (const [id, , reason] of forged) {
    const job = await failedJob(q, id);
    expect(job.failedReason, id).toMatch(reason);
    expect(job.attemptsMade, id).toBeLessThanOrEqual(1);
  }
}

let sentinels = 0;

/**
 * After a sentinel run (allowed, writing under ALLOWED) has been told to the webhook target and the
 * lineage server, as anything told before it would have been: the foreign listener heard nothing,
 * the targets and the lineage server heard only allowed runs and never the forged text, and every
 * file under the roots but the sentinels' is as it was.
 */
async function expectNothingSentOrWritten(): Promise<void> {
  const runId = `sentinel-${++sentinels}`;
  allowed.add(runId);
  await queue.enqueue({ input: rentals, model: MODEL, out: join(dirs.out, ALLOWED), options: { runId } });
  await waitFor(
    `${runId} to be told`,
    () =>
      hook.accepted.some((a) => a.body.runId === runId) &&
      lineage.events().some((e) => e.eventType === 'COMPLETE' && e.run.facets.batchScorer?.runId === runId),
    30_000,
  );
  expect(foreign.requests).toEqual([]);
  expect(foreign.connections()).toBe(0);
  for (const target of [hook, pipelineHook]) {
    expect(target.refused).toEqual([]);
    expect(target.accepted.map((a) => a.body.runId).filter((id) => !allowed.has(String(id)))).toEqual([]);
    for (const request of target.requests) expect(request.body).not.toContain(FORGED_TEXT);
  }
  expect(
    lineage
      .events()
      .map((e) => e.run.facets.batchScorer?.runId)
      .filter((id) => !allowed.has(String(id))),
  ).toEqual([]);
  const outAfter = Object.fromEntries(Object.entries(await folderTree(dirs.out)).filter(([path]) => !path.startsWith(`${ALLOWED}/`)));
  expect(outAfter).toEqual(outBefore);
  expect(await folderTree(dirs.in)).toEqual(inBefore);
  expect(worker.log()).not.toContain(SECRET);
}

describe('forged jobs, added to Redis with BullMQ directly', () => {
  it('notifications: no URL, body or path of their own, and no seal but NOTIFY_SECRET’s, is taken: nothing sent, nothing written', async () => {
    const notifications = queueOf(NOTIFICATIONS_QUEUE);
    try {
      const [genuine] = await notifications.getJobs(['completed']);
      const data = genuine.data as DeliveryJob;
      const { seal, ...fields } = data;
      const toForeign = targetName(`${foreign.url}/hook`);
      const guessed = sealedDelivery('a-guessed-secret-of-32-characters', { ...fields, target: toForeign });
      await expectRefused(notifications, [
        // The shape the issue found trusted: any URL, any body, and an id that climbs onto a succeeded run's manifest.
        ['forged-old-shape', { id: '../manifest', url: `${foreign.url}/hook`, body: FORGED_TEXT, folder: goodFolder(), events: ['completed'] }, /\[E_USAGE\]$/],
        ['forged-dotdot', { ...data, deliveryId: '../manifest' }, /deliveryId: must be a delivery id.*\[E_USAGE\]$/],
        [
          'forged-tampered',
          { ...fields, seal, end: { ...fields.end, state: 'failed', error: { code: 'E_INTERNAL', message: FORGED_TEXT } } },
          /not sealed with this deployment's NOTIFY_SECRET.*\[E_NOT_ALLOWED\]$/,
        ],
        ['forged-guessed', guessed, /not sealed with this deployment's NOTIFY_SECRET.*\[E_NOT_ALLOWED\]$/],
        ['forged-replay', data, /its job id is not its delivery id.*\[E_NOT_ALLOWED\]$/],
      ]);
      expect(hook.accepted.filter((a) => a.body.runId === 'good')).toHaveLength(1);
      expect(worker.log()).toContain('webhook delivery job refused: nothing sent or written');
    } finally {
      await notifications.close();
    }
    await expectNothingSentOrWritten();
  });

  it('runs: a run id that climbs out, a private input, a foreign service, or a pipeline’s name on another run: refused, and nothing told of them', async () => {
    const runs = queueOf(RUNS_QUEUE);
    const request = { input: rentals, model: MODEL, out: dirs.out, options: {} };
    const fireTime = new Date(FIRE_MILLIS).toISOString();
    const schedule = { kind: 'schedule', pipeline: 'nightly', fireTime, cron: '0 3 1 1 *', tz: 'UTC' };
    const describes = sim.stats.describeRequests;
    try {
      await expectRefused(runs, [
        ['forged-climb', { runId: '../manifest', request: { ...request, out: goodFolder() } }, /runId: use letters, digits.*\[E_USAGE\]$/],
        ['forged-private', { runId: 'forged-private', request: { ...request, input: join(dirs.private, 'customers.csv') } }, /INPUT_ROOTS.*\[E_NOT_ALLOWED\]$/],
        ['forged-service', { runId: 'forged-service', request: { ...request, options: { service: foreign.url } } }, /SERVICE_URLS.*\[E_NOT_ALLOWED\]$/],
        [
          'forged-ghost',
          { runId: 'forged-ghost', request: { ...request, trigger: { ...schedule, pipeline: 'ghost' } } },
          /pipeline ghost is not declared in the jobs folder.*\[E_NOT_ALLOWED\]$/,
        ],
        [
          'forged-nightly',
          { runId: 'forged-nightly', request: { ...request, out: join(dirs.out, 'other'), trigger: schedule } },
          /its output is not pipeline nightly's.*\[E_NOT_ALLOWED\]$/,
        ],
        [
          'forged-drop',
          {
            runId: 'forged-drop',
            request: {
              ...request,
              out: `${dirs.out}/drops/`,
              trigger: { kind: 'poll', pipeline: 'drops', object: { location: rentals, etag: '1-1' }, foundAt: fireTime },
            },
          },
          /its input is not a file pipeline drops watches.*\[E_NOT_ALLOWED\]$/,
        ],
      ]);
    } finally {
      await runs.close();
    }
    // Refused before the service is asked anything.
    expect(sim.stats.describeRequests).toBe(describes);
    await expectNothingSentOrWritten();
  });

  it('segments: a folder outside the roots, a run id that climbs out, another run’s folder, or a finished run: refused, and no run told of them', async () => {
    const segments = queueOf(SEGMENTS_QUEUE);
    const predicts = sim.stats.predictRequests;
    try {
      await expectRefused(segments, [
        ['forged-outside', { runId: 'r-elsewhere', folder: join(dirs.elsewhere, 'r-elsewhere'), index: 0, generation: 1 }, /OUTPUT_ROOTS.*\[E_NOT_ALLOWED\]$/],
        ['forged-climb', { runId: '../good', folder: goodFolder(), index: 0, generation: 1 }, /runId: use letters, digits.*\[E_USAGE\]$/],
        ['forged-other', { runId: 'good', folder: join(dirs.out, 'other', 'x'), index: 0, generation: 1 }, /folder: must be the run folder.*\[E_USAGE\]$/],
      ]);
      // The succeeded run's own folder: its run.json is gone with its _work, so the job fails; the run is not told as failed.
      await expectRefused(segments, [
        ['forged-finished', { runId: 'good', folder: goodFolder(), index: 0, generation: 1 }, /run\.json is missing from its run folder/],
      ]);
      expect((await queue.get('good'))?.state).toBe('succeeded');
    } finally {
      await segments.close();
    }
    expect(sim.stats.predictRequests).toBe(predicts);
    await expectNothingSentOrWritten();
  });

  it('schedules: a pipeline not declared starts nothing; a declared one starts its run as declared, whatever the job carries', async () => {
    const schedules = queueOf(SCHEDULES_QUEUE);
    const carried = {
      model: MODEL,
      input: join(dirs.private, 'customers.csv'),
      output: `${dirs.elsewhere}/`,
      options: { service: foreign.url },
      cron: '* * * * *',
      tz: 'UTC',
    };
    try {
      await expectRefused(schedules, [
        [
          'forged-ghost',
          { pipeline: 'ghost', ...carried },
          /names pipeline ghost, which the jobs folder does not declare.*\[E_NOT_ALLOWED\]$/,
          { prevMillis: FIRE_MILLIS },
        ],
        ['forged-unfired', { pipeline: 'nightly', ...carried }, /was not fired by a job scheduler.*\[E_CONFIG\]$/],
      ]);
      await schedules.add('forged', { pipeline: 'nightly', ...carried }, { jobId: 'forged-nightly', prevMillis: FIRE_MILLIS });
      const fired = await waitFor('the fired job to make its run', async () => (await Job.fromId(schedules, 'forged-nightly'))?.returnvalue as unknown, 30_000);
      const declaredInput = join(dirs.in, 'nightly', '2026-01-01.csv');
      expect(fired).toEqual({ runId: 'nightly-20260101T0300Z', created: true, input: declaredInput });
      allowed.add('nightly-20260101T0300Z');
      // The declared input, which is not there: the run fails before it makes a folder, as the pipeline's would.
      const run = await finished('nightly-20260101T0300Z');
      expect(run).toMatchObject({ state: 'failed', input: declaredInput, pipeline: 'nightly' });
      expect(reasonOf(run)).toContain(`${declaredInput}: no such file or object [E_INPUT_NOT_FOUND]`);
      await waitFor('the pipeline’s target to hear it', () => pipelineHook.accepted.length === 1);
      expect(pipelineHook.accepted[0].body).toMatchObject({
        runId: 'nightly-20260101T0300Z',
        pipeline: 'nightly',
        links: { folder: join(dirs.out, 'nightly', 'nightly-20260101T0300Z') },
      });
    } finally {
      await schedules.close();
    }
    expect(worker.log()).toContain('the fired job is not the pipeline as declared');
    await expectNothingSentOrWritten();
  });

  it('file drops: a claim in Redis naming a run id that climbs out starts no run for the file', async () => {
    const file = join(dirs.in, 'drops', 'new.csv');
    const info = await stat(file);
    await redis.hset(
      `${prefix}:file-drops:drops`,
      `${file}\n${info.size}-${Math.trunc(info.mtimeMs)}`,
      JSON.stringify({ runId: '../../elsewhere/x', enqueued: false }),
    );
    const watch = await runCli(['watch', '--once'], env);
    expect(watch.code).toBe(1);
    expect(watch.stderr).toMatch(/runId: use letters, digits/);
    expect(watch.stdout).toBe('');
    expect(await queue.list({ pipeline: 'drops' })).toEqual([]);
    await expectNothingSentOrWritten();
  });
});
