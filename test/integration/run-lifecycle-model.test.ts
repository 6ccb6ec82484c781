import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOptionsInput } from '../../src/config/run-options.js';
import { BatchScorerError, errorCode } from '../../src/errors.js';
import { readManifest } from '../../src/scoring/manifest.js';
import type { Verdict } from '../../src/scoring/judge-run.js';
import { isSettled } from '../../src/scoring/run-lifecycle.js';
import type { RunResult } from '../../src/scoring/run-result.js';
import type { RunStatus } from '../../src/queue/producer.js';
import { RUNS_QUEUE } from '../../src/queue/queues.js';
import { RUN_SETTLED_EVENT, settledResult } from '../../src/queue/run-results.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { runCli } from '../helpers/cli.js';
import { BASELINE_RUN, endingOptions, ENDINGS, expectOneEndPerAttempt, modelRunInput, RunModel, type Ending } from '../helpers/lifecycle-model.js';
import { useQueueFixture, waitFor, type WorkerProcess } from '../helpers/queue.js';
import { rentalsText, tempDir } from '../helpers/scoring.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

// The lifecycle of a run id in queue mode, driven by random sequences of requests (enqueue,
// resume, cancel, accept, reject) made to real worker processes over Redis, and checked after each
// against the model of lifecycle-model.ts, as the direct-mode test (run-lifecycle-model.test.ts)
// checks `score`: RunQueue's status and result, the manifest in the run folder, the runs queue's
// `run-settled` events and the webhooks a loopback receiver takes all tell the same ends in the
// same order, each attempt ends once, and a refused request tells nothing and leaves the run
// folder as it was.

const MODEL = 'mindsdb/home_rentals_model';
const SECRET = 'model-test-webhook-secret-0123';
const ROWS = 2_400;
/**
 * 24 segments of 4 batches, each with one failing row. An attempt that does not end the run keeps
 * a few segments at most: a cap keeps none (--max-requests 1 is planning's probe; a past deadline
 * refuses it), a cancel the segments being scored (the others are removed at once), past
 * --max-error-rate 0 the segments being scored when the first failing row is met. So the 5
 * requests of a sequence never finish every segment by chance: each attempt ends as asked.
 */
const SHAPE: RunOptionsInput = { segmentRows: 100, batchSize: 25, maxErrorRate: 0.05 };

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
let baseInput: string;
beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'shifted.csv');
  baseInput = join(tmp.dir, 'rentals.csv');
  await writeFile(baseInput, rentalsText(ROWS));
  await writeFile(input, modelRunInput(ROWS, SHAPE.segmentRows!));
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();

/** What every sequence shares: the worker (replaced when a crash kills it), the webhook receiver, the runs queue. */
interface Shared {
  worker: WorkerProcess;
  hook: Awaited<ReturnType<typeof startWebhookReceiver>>;
  env: Record<string, string>;
  redis: Redis;
  runs: Queue;
}
let shared: Shared;

/** One sequence's run: its id and output, and the options of the last submission the queue took (RunQueue.resume asks them again). */
interface QueueWorld {
  runId: string;
  out: string;
  folder: string;
  stored?: RunOptionsInput;
}

/** The results the runs queue's event stream told of the run, in order (read whole: nothing told is missed). */
async function settledEvents(redis: Redis, runs: Queue, runId: string): Promise<RunResult[]> {
  const entries = await redis.xrange(runs.keys.events, '-', '+');
  return entries.flatMap(([, fields]) => {
    const args = Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : [])));
    const result = args.event === RUN_SETTLED_EVENT && args.runId === runId ? settledResult(args) : undefined;
    return result ? [result] : [];
  });
}

/**
 * Every file of the run folder, `_work` too, with its bytes and modification time; but its
 * webhook delivery records (`notifications/`), which deliveries of ends told before write when
 * they are attempted.
 */
async function folderSnapshot(folder: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = join(e.parentPath, e.name);
    if (!e.isFile() || path.startsWith(join(folder, 'notifications'))) continue;
    files[path] = `${(await stat(path)).mtimeMs} ${await readFile(path, 'utf8')}`;
  }
  return files;
}

/** The run once it has settled, its jobs all stopped (a cancelled or failed run's segments may outlive its run job a moment). */
async function settled(runId: string): Promise<RunStatus> {
  const status = await waitFor(
    `run ${runId} to settle`,
    async () => {
      const s = await f.queue.get(runId);
      return s?.finishedAt !== undefined && isSettled(s.state) && s;
    },
    30_000,
  );
  await waitFor('no segment job left', async () => (await f.segmentJobs()) === 0, 10_000);
  return status;
}

/** What every observer says after a request, checked against the model. */
async function expectObserversAgree(model: RunModel, world: QueueWorld): Promise<void> {
  const ends = model.told.filter((t) => t.kind === 'end');
  expectOneEndPerAttempt(model.told);
  const told = ends.map((t) => [t.state, t.attempt]);
  expect(
    (await settledEvents(shared.redis, shared.runs, world.runId)).map((r) => [r.state, r.attempt]),
    'run-settled events',
  ).toEqual(told);
  const hooks = await waitFor(
    `${ends.length} webhooks of run ${world.runId}`,
    () => {
      const taken = shared.hook.accepted.filter((d) => d.body.runId === world.runId);
      return taken.length >= ends.length && taken;
    },
    15_000,
  );
  const bodies = hooks.map((d) => d.body as { event: string; state: string; result: RunResult });
  expect(
    bodies.map((b) => [b.event, b.state, b.result.state, b.result.attempt]),
    'webhooks',
  ).toEqual(ends.map((t) => [t.state, t.state, t.state, t.attempt]));

  const last = model.lastEnd;
  const status = await f.queue.get(world.runId);
  expect(status && [status.state, status.result?.state, status.result?.attempt], 'RunQueue status').toEqual(last && [model.state, last.state, last.attempt]);
  const recorded = model.lastRecorded;
  const manifest = await readManifest(createStorage(), parseLocation(world.folder));
  expect(manifest && [manifest.state, manifest.attempt], 'the manifest in the run folder').toEqual(recorded && [recorded.state, recorded.attempt]);
}

/**
 * A request to score the run (enqueue, or RunQueue.resume where the options it keeps make the
 * attempt end as asked), made to end as `ending`: `stopped` is RunQueue.cancel while its segments
 * are scored; `crash` kills the worker then (SIGKILL) and starts another, which goes on with the
 * same attempt to its end.
 */
class Submit implements fc.AsyncCommand<RunModel, QueueWorld> {
  constructor(
    readonly ending: Ending,
    readonly cap: 'deadline' | 'requests',
    readonly viaResume: boolean,
  ) {}

  /** How it was asked, once it ran: RunQueue.resume only where that asks for the ending wanted. */
  private asked: 'resume' | 'enqueue' | undefined;

  check = () => true;

  async run(model: RunModel, world: QueueWorld): Promise<void> {
    const options = { runId: world.runId, ...SHAPE, ...endingOptions(this.ending, this.cap === 'deadline' ? 'deadline' : 1) };
    const { maxRequests, deadline, ...kept } = options;
    // RunQueue.resume asks the stored request again, under the caps it is given.
    const resume = this.viaResume && world.stored !== undefined && JSON.stringify(world.stored) === JSON.stringify({ ...kept, runId: world.runId });
    this.asked = resume ? 'resume' : 'enqueue';
    const before = await folderSnapshot(world.folder);
    const submitting = resume
      ? f.queue.resume(world.runId, { ...(maxRequests !== undefined && { maxRequests }), ...(deadline !== undefined && { deadline }) })
      : f.queue.enqueue({ input, model: MODEL, out: world.out, options });
    const answer = await submitting.catch((err: unknown) => err);
    if (model.refusesScore) {
      // A run that succeeded or is held is the run its id names: enqueued again, it is that run; resumed, refused.
      // A rejected one failed for good: refused either way.
      if (resume || model.judged === 'reject') expect(errorCode(answer)).toBe('E_RUN_CONFLICT');
      else expect(answer).toEqual({ runId: world.runId, created: false });
      expect(await folderSnapshot(world.folder), 'the run folder').toEqual(before);
    } else {
      expect(answer, 'the submission').toMatchObject(resume ? { resumed: true } : { created: true, ...(world.stored && { resumed: true }) });
      world.stored = { ...kept, runId: world.runId };
      await this.interfere(world);
      expect((await settled(world.runId)).state).toBe(this.ending === 'crash' ? 'succeeded' : model.endsIn(this.ending));
    }
    model.score(this.ending);
    // The worker that takes a crashed run's jobs over goes on with the same attempt, to its end.
    if (this.ending === 'crash') model.score('succeeded');
    await expectObserversAgree(model, world);
  }

  /** Cancels the run, or kills its worker, once it has begun its attempt (its plan made, its progress counted). */
  private async interfere(world: QueueWorld): Promise<void> {
    if (this.ending !== 'stopped' && this.ending !== 'crash') return;
    await waitFor('the run to be scored', async () => (await f.queue.get(world.runId))?.progress !== undefined, 30_000);
    if (this.ending === 'stopped') {
      expect((await f.queue.cancel(world.runId)).state).toMatch(/^cancell(ing|ed)$/);
      return;
    }
    shared.worker.child.kill('SIGKILL');
    await shared.worker.exited;
    shared.worker = f.worker([], shared.env);
  }

  toString(): string {
    const cap = this.ending === 'expired' ? ` ${this.cap === 'deadline' ? 'deadline past' : 'max-requests 1'}` : '';
    return `${this.asked ?? 'submit'}(${this.ending}${cap})`;
  }
}

/** The run's first request, cancelled before a worker takes it (the runs queue is paused meanwhile): it ends as no attempt. */
class CancelQueued implements fc.AsyncCommand<RunModel, QueueWorld> {
  check = (model: Readonly<RunModel>) => model.state === undefined;

  async run(model: RunModel, world: QueueWorld): Promise<void> {
    await shared.runs.pause();
    try {
      world.stored = { runId: world.runId, ...SHAPE };
      expect(await f.queue.enqueue({ input, model: MODEL, out: world.out, options: world.stored })).toEqual({ runId: world.runId, created: true });
      expect((await f.queue.cancel(world.runId)).state).toBe('cancelled');
    } finally {
      await shared.runs.resume();
    }
    // A worker takes its job all the same, and ends it, telling its end.
    expect((await settled(world.runId)).state).toBe('cancelled');
    model.cancelQueued();
    await expectObserversAgree(model, world);
  }

  toString(): string {
    return 'cancel(queued)';
  }
}

/** Another input enqueued under the run's id: refused while the run can be resumed; the run itself once it succeeded or is held. */
class OtherInput implements fc.AsyncCommand<RunModel, QueueWorld> {
  check = (model: Readonly<RunModel>) => model.claimed && model.judged !== 'reject';

  async run(model: RunModel, world: QueueWorld): Promise<void> {
    const before = await folderSnapshot(world.folder);
    const answer = await f.queue
      .enqueue({ input: baseInput, model: MODEL, out: world.out, options: { runId: world.runId, ...SHAPE } })
      .catch((err: unknown) => err);
    if (model.refusesScore) expect(answer).toEqual({ runId: world.runId, created: false });
    else expect(errorCode(answer), String(answer)).toBe('E_RUN_EXISTS');
    expect(await folderSnapshot(world.folder), 'the run folder').toEqual(before);
    await expectObserversAgree(model, world);
  }

  toString(): string {
    return 'enqueue(other input)';
  }
}

/** RunQueue.cancel of a settled run: refused (a cancelled one answers as it is). */
class CancelSettled implements fc.AsyncCommand<RunModel, QueueWorld> {
  check = (model: Readonly<RunModel>) => model.state !== undefined;

  async run(model: RunModel, world: QueueWorld): Promise<void> {
    const before = await folderSnapshot(world.folder);
    const answer = await f.queue.cancel(world.runId).catch((err: unknown) => err);
    if (model.state === 'cancelled') expect(answer).toMatchObject({ state: 'cancelled' });
    else expect([answer instanceof BatchScorerError, errorCode(answer)]).toEqual([true, 'E_RUN_CONFLICT']);
    expect(await folderSnapshot(world.folder), 'the run folder').toEqual(before);
    await expectObserversAgree(model, world);
  }

  toString(): string {
    return 'cancel(settled)';
  }
}

/** `batch-scorer accept` or `reject` (judgeRun, then RunQueue.judged and the webhooks, as POST /runs/:id/accept does). */
class Judge implements fc.AsyncCommand<RunModel, QueueWorld> {
  constructor(readonly verdict: Verdict) {}

  check = (model: Readonly<RunModel>) => model.claimed;

  async run(model: RunModel, world: QueueWorld): Promise<void> {
    const before = await folderSnapshot(world.folder);
    const cli = await runCli([this.verdict, world.runId, '--out', world.out, '--by', 'model-test', '--json'], { ...f.env(), ...shared.env });
    const expected = model.judge(this.verdict);
    if (expected === 'refused') {
      expect([cli.code, cli.stderr]).toEqual([2, expect.stringContaining('[E_RUN_CONFLICT]')]);
    } else {
      expect(cli.code, cli.stderr).toBe(0);
      expect(JSON.parse(cli.stdout)).toMatchObject({ already: expected === 'already' });
    }
    if (expected !== 'judged') expect(await folderSnapshot(world.folder), 'the run folder').toEqual(before);
    await expectObserversAgree(model, world);
  }

  toString(): string {
    return this.verdict;
  }
}

const submit = fc
  .record({ ending: fc.constantFrom(...ENDINGS), cap: fc.constantFrom('deadline' as const, 'requests' as const), viaResume: fc.boolean() })
  .map(({ ending, cap, viaResume }) => new Submit(ending, cap, viaResume));
const commands = fc
  .commands(
    [
      submit,
      submit,
      submit,
      fc.constant(new CancelQueued()),
      fc.constant(new OtherInput()),
      fc.constant(new CancelSettled()),
      fc.constantFrom('accept' as const, 'reject' as const).map((verdict) => new Judge(verdict)),
    ],
    { maxCommands: 5 },
  )
  .filter((cmds) => [...cmds].length >= 3);

describe('the run lifecycle in queue mode, against a model', () => {
  it('tells status, manifest, run-settled events and webhooks the same ends in order, nothing for refused requests', async () => {
    await f.setup({ latencyMs: 20 });
    const hook = await startWebhookReceiver(SECRET);
    const env = { NOTIFY_URLS: hook.url, NOTIFY_SECRET: SECRET };
    const redis = new Redis(f.redisUrl, { maxRetriesPerRequest: null });
    shared = { worker: f.worker([], env), hook, env, redis, runs: new Queue(RUNS_QUEUE, { connection: redis, prefix: f.prefix }) };
    try {
      const out = join(tmp.dir, 'out');
      await f.queue.enqueue({ input: baseInput, model: MODEL, out, options: { runId: BASELINE_RUN, ...SHAPE } });
      expect((await settled(BASELINE_RUN)).state).toBe('succeeded');
      let sequence = 0;
      await fc.assert(
        fc.asyncProperty(commands, async (cmds) => {
          const runId = `m${++sequence}`;
          const setup = () => ({ model: new RunModel('cancelled'), real: { runId, out, folder: join(out, runId) } });
          await fc.asyncModelRun(setup, cmds);
        }),
        // Each request waits for real workers: few sequences, and a failure is reported as found, not shrunk.
        { numRuns: 4, endOnFailure: true },
      );
    } finally {
      await shared.runs.close();
      redis.disconnect();
      await hook.close();
    }
  }, 150_000);

  // Cases the model found wrong once, kept whatever the draw.

  it('a resumed run cancelled before a worker takes it ends no attempt: the last one stays ended once, its record kept', async () => {
    await f.setup();
    f.worker();
    const redis = new Redis(f.redisUrl, { maxRetriesPerRequest: null });
    const runs = new Queue(RUNS_QUEUE, { connection: redis, prefix: f.prefix });
    try {
      const out = join(tmp.dir, 'requeued');
      const options = { runId: 'rq', ...SHAPE };
      await f.queue.enqueue({ input, model: MODEL, out, options: { ...options, maxErrorRate: 0 } });
      expect((await settled('rq')).state).toBe('failed');
      await runs.pause();
      await f.queue.enqueue({ input, model: MODEL, out, options });
      await f.queue.cancel('rq');
      await runs.resume();
      expect((await settled('rq')).state).toBe('cancelled');
      const results = await settledEvents(redis, runs, 'rq');
      expect(results.map((r) => r.state)).toEqual(['failed', 'cancelled']);
      // Attempt 1 ended failed; the cancel ends no attempt (none began): told as attempt 0, the manifest of attempt 1 kept.
      expect(results.map((r) => r.attempt)).toEqual([1, 0]);
      expect(JSON.parse(await readFile(join(out, 'rq', 'manifest.json'), 'utf8'))).toMatchObject({ state: 'failed', attempt: 1 });
    } finally {
      await runs.close();
      redis.disconnect();
    }
  });

  it('a rejected run (failed for good) is refused a resume at the door', async () => {
    await f.setup();
    f.worker();
    const out = join(tmp.dir, 'rejected');
    await f.queue.enqueue({ input: baseInput, model: MODEL, out, options: { runId: BASELINE_RUN, ...SHAPE } });
    expect((await settled(BASELINE_RUN)).state).toBe('succeeded');
    await f.queue.enqueue({ input, model: MODEL, out, options: { runId: 'rj', ...SHAPE, ...endingOptions('held', 1) } });
    expect((await settled('rj')).state).toBe('held');
    const reject = await runCli(['reject', 'rj', '--out', out, '--by', 'model-test'], f.env());
    expect(reject.code, reject.stderr).toBe(0);
    expect((await f.queue.get('rj'))?.state).toBe('failed');
    await expect(f.queue.resume('rj')).rejects.toMatchObject({ code: 'E_RUN_CONFLICT' });
    await expect(f.queue.enqueue({ input, model: MODEL, out, options: { runId: 'rj', ...SHAPE } })).rejects.toMatchObject({ code: 'E_RUN_CONFLICT' });
    expect(await f.queue.get('rj')).toMatchObject({ state: 'failed', result: { rejected: { by: 'model-test' } } });
  });
});
