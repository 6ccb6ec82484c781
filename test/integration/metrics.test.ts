import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collectQueueDepths } from '../../src/metrics/queue-depths.js';
import { createMetricsRegistry } from '../../src/metrics/registry.js';
import { trackRunOutcomes } from '../../src/metrics/run-outcomes.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { RUNS_QUEUE, SEGMENTS_QUEUE, type RunJobData } from '../../src/queue/queues.js';
import { openRunEvents } from '../../src/queue/run-events.js';
import { keepRunResult } from '../../src/queue/run-results.js';
import type { RunResult } from '../../src/scoring/run-result.js';
import { runCli } from '../helpers/cli.js';
import { byOutcome, parseSamples, promtoolCheck, sample } from '../helpers/metrics.js';
import { noteMissing, PROMTOOL } from '../helpers/tools.js';

if (!PROMTOOL) noteMissing('the promtool checks of the worker and serve metrics', 'prometheus');
import { dropPrefix, freePort, REDIS_URL, uniquePrefix, useQueueFixture, waitFor } from '../helpers/queue.js';
import { tempDir, writeRentalsWithEngineErrors } from '../helpers/scoring.js';

const TOKEN = 'metrics-test-token';
const ROWS = 1_200;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'some-bad.csv');
  await writeRentalsWithEngineErrors(input, ROWS, (i) => i % 300 === 7);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const scrape = (url: string, token?: string) => fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});

describe('worker --metrics-port', () => {
  it('counts the work the worker did as the manifest does, behind API_TOKEN, and passes promtool', async () => {
    // Overload answers, so that retries and their outcome are counted too.
    await f.setup({ rateLimitRate: 0.15, retryAfterSeconds: 0, latencyMs: 2 });
    const port = await freePort();
    // A segment attempt that stops midway is tried again, and the worker counts the rows it scores
    // again (the manifest counts each row once): the counts below would differ by them. Two things
    // could stop one here, and neither may. A lock renewed late on a loaded machine: the fixture's
    // 2 s lock (for tests that kill workers) gives way to the default 30 s. A call out of retries:
    // the simulator draws its 429s from a fixed seeded sequence, so the same timing meets the same
    // draws, and in CI one call spent its 6 retries on them and failed its segment. 30 retries do
    // not all meet a 429 at this rate (0.15^31).
    const spared = { maxErrorRate: 0.1, retries: 30 };
    const m1 = { ...spared, runId: 'm1', segmentRows: 400, batchSize: 25 };
    const worker = f.worker(['--metrics-port', String(port), '--lock-duration', '30000'], { API_TOKEN: TOKEN });
    const url = `http://127.0.0.1:${port}`;
    // serve's side, from the same queue: run outcomes and queue depths.
    const serveRegistry = createMetricsRegistry();
    const runEvents = openRunEvents({ redisUrl: f.redisUrl, prefix: f.prefix });
    closers.push(() => runEvents.close());
    trackRunOutcomes(serveRegistry, runEvents.events);
    await runEvents.ready;

    await waitFor(
      'the metrics server',
      () =>
        scrape(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        ),
      30_000,
    );
    const request = { input, model: 'mindsdb/home_rentals_model', out: join(tmp.dir, 'out') };
    const { runId } = await f.queue.enqueue({ ...request, options: m1 });
    expect((await f.finished(runId)).state).toBe('succeeded');
    const manifest = JSON.parse(await readFile(join(tmp.dir, 'out', 'm1', 'manifest.json'), 'utf8')) as Manifest;
    const counts = manifest.counts!;
    expect(counts.rowsQuarantined).toBe(4);
    expect(counts.retries).toBeGreaterThan(counts.rowsQuarantined); // each engine failure is tried once more, overloads too

    const answer = await scrape(`${url}/metrics`, TOKEN);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await answer.text();
    const s = parseSamples(text);
    // Should a segment attempt still stop midway, the worker's warnings and errors say why.
    const troubles = () =>
      worker
        .log()
        .split('\n')
        .filter((line) => /"level":(40|50|60)/.test(line))
        .join('\n');
    expect(byOutcome(s, 'batch_scorer_rows_total'), troubles()).toEqual({ scored: counts.rowsScored, quarantined: counts.rowsQuarantined });
    expect(byOutcome(s, 'batch_scorer_segments_total')).toEqual({ scored: 3, failed: 0, stopped: 0 });
    expect(sample(s, 'batch_scorer_predict_retries_total')).toBe(counts.retries);
    // Every call is one request plus one per retry; the plan's probe is not a scoring request.
    const requests = byOutcome(s, 'batch_scorer_predict_requests_total');
    expect(Object.values(requests).reduce((a, b) => a + b)).toBe(counts.requests + counts.retries);
    expect(requests.overloaded).toBeGreaterThan(0);
    expect(requests['bad-rows']).toBeGreaterThanOrEqual(8); // 4 rows, each failing twice at least
    expect(sample(s, 'batch_scorer_predict_duration_seconds_count{outcome="answered"}')).toBe(requests.answered);
    expect(sample(s, 'batch_scorer_predict_duration_seconds_bucket{le="+Inf",outcome="answered"}')).toBe(requests.answered);
    expect(sample(s, 'batch_scorer_predict_requests_in_flight')).toBe(0);
    expect(sample(s, 'batch_scorer_predict_concurrency_limit')).toBe(0);
    expect(sample(s, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).not.toContain(TOKEN);
    if (PROMTOOL) expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' });

    // serve counts the run's rows exactly as its manifest does.
    const succeededOnServe = (runs: number) =>
      waitFor(
        `${runs} succeeded runs on serve`,
        async () => {
          const v = parseSamples(await serveRegistry.metrics());
          return sample(v, 'batch_scorer_runs_total{outcome="succeeded"}') === runs ? v : undefined;
        },
        10_000,
      );
    const served = await succeededOnServe(1);
    expect(byOutcome(served, 'batch_scorer_run_rows_total')).toEqual({ scored: counts.rowsScored, quarantined: counts.rowsQuarantined });

    // Its job gone (retention), the run enqueued again finds it done and is not counted again; a
    // run after it is, so by then serve has read the repeat's event too (events come in order).
    const connection = new Redis(f.redisUrl);
    const runs = new Queue(RUNS_QUEUE, { connection, prefix: f.prefix });
    closers.push(async () => {
      await runs.close();
      await connection.quit();
    });
    expect(await runs.remove(runId)).toBe(1);
    await f.queue.enqueue({ ...request, options: m1 });
    expect((await f.finished(runId)).state).toBe('succeeded');
    await f.queue.enqueue({ ...request, options: { ...spared, runId: 'm2', limit: 100 } });
    expect((await f.finished('m2')).state).toBe('succeeded');
    const m2 = (JSON.parse(await readFile(join(tmp.dir, 'out', 'm2', 'manifest.json'), 'utf8')) as Manifest).counts!;
    const both = await succeededOnServe(2);
    expect(byOutcome(both, 'batch_scorer_run_rows_total')).toEqual({
      scored: counts.rowsScored + m2.rowsScored,
      quarantined: counts.rowsQuarantined + m2.rowsQuarantined,
    });

    // Without the token, or with another: refused. Health is open.
    const refused = await scrape(`${url}/metrics`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await scrape(`${url}/metrics`, 'wrong')).status).toBe(401);
    expect((await scrape(`${url}/healthz`)).status).toBe(200);
    expect(worker.log()).not.toContain(TOKEN);

    // The metrics server closes with the worker's shutdown.
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    await expect(scrape(`${url}/healthz`)).rejects.toThrow();
  });

  it('refuses a --metrics-host beyond loopback without API_TOKEN, and a port taken, with exit 2', async () => {
    const open = await runCli(['worker', '--metrics-port', '9464', '--metrics-host', '0.0.0.0'], { API_TOKEN: '' });
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/--metrics-host 0\.0\.0\.0 is reachable from other machines: set API_TOKEN .* \[E_USAGE\]/);
    const alone = await runCli(['worker', '--metrics-host', '127.0.0.1']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--metrics-host needs --metrics-port \[E_USAGE\]/);
    const bad = await runCli(['worker', '--metrics-port', '70000']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--metrics-port takes a port from 1 to 65535, got "70000"/);

    await f.setup();
    const port = await freePort();
    const first = f.worker(['--metrics-port', String(port)]);
    await waitFor(
      'the first metrics server',
      () =>
        scrape(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        ),
      30_000,
    );
    const second = await runCli(['worker', '--metrics-port', String(port)], f.env());
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(new RegExp(`--metrics-port ${port}: cannot listen on 127\\.0\\.0\\.1:${port} .*EADDRINUSE.* \\[E_USAGE\\]`));
    expect(first.child.exitCode).toBe(null);
  });
});

describe('run outcomes and queue depths, for serve', () => {
  const prefix = uniquePrefix();
  afterAll(() => dropPrefix(prefix));

  it('counts each run once by its final outcome, rows of succeeded runs only, and queue depths by state; passes promtool', async () => {
    const config = { redisUrl: REDIS_URL, prefix };
    const registry = createMetricsRegistry();
    const runEvents = openRunEvents(config);
    closers.push(() => runEvents.close());
    trackRunOutcomes(registry, runEvents.events);
    await runEvents.ready;
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    closers.push(async () => connection.quit());
    const runs = new Queue(RUNS_QUEUE, { connection, prefix });
    const segments = new Queue(SEGMENTS_QUEUE, { connection, prefix });
    closers.push(() => Promise.all([runs.close(), segments.close()]));
    collectQueueDepths(registry, [runs, segments]);

    // Run jobs end as the run job does: their attempt's result kept and told (keepRunResult) once
    // it is final, then answered (summary() in run-job.ts) or thrown (toQueueError).
    const result = (state: RunResult['state'], rows?: [number, number]): RunResult => ({
      state,
      attempt: 1,
      finishedAt: new Date().toISOString(),
      error: state === 'succeeded' ? null : { code: state === 'held' ? 'E_DRIFT' : 'E_MODEL_NOT_FOUND', message: 'x' },
      counts: rows ? { rowsIn: rows[0] + rows[1], rowsScored: rows[0], rowsQuarantined: rows[1] } : null,
      rowsPerSecond: null,
      drift: null,
      shadow: null,
      cap: null,
      accepted: null,
      rejected: null,
    });
    const ends = async (name: string, r: RunResult) => keepRunResult(runs as Queue<RunJobData>, connection, name, r);
    const answers: Record<string, (attempt: number) => Promise<unknown>> = {
      ok: async () => ends('ok', result('succeeded', [7, 2])),
      // Fails once, passing, then succeeds: one run, counted once.
      flaky: async (attempt) => {
        if (attempt === 0) throw new Error('service overloaded [E_SERVICE_UNAVAILABLE]');
        await ends('flaky', result('succeeded', [5, 0]));
      },
      // A run that succeeded under an earlier job, enqueued again: it keeps no new result, and is not counted again.
      repeat: () => Promise.resolve({ repeat: true }),
      bad: async () => {
        await ends('bad', result('failed'));
        throw new UnrecoverableError('unknown model [E_MODEL_NOT_FOUND]');
      },
      cancelled: async () => {
        await ends('cancelled', result('cancelled'));
        throw new UnrecoverableError('run cancelled [E_CANCELLED]');
      },
      expired: async () => {
        await ends('expired', result('expired'));
        throw new UnrecoverableError('run expired [E_EXPIRED]');
      },
      // Held by its drift gate, then accepted: counted held, then succeeded with its rows.
      held: async () => {
        await ends('held', result('held', [3, 1]));
        throw new UnrecoverableError('drifted [E_DRIFT]');
      },
    };
    const worker = new Worker(RUNS_QUEUE, (job) => answers[job.name](job.attemptsMade), { connection, prefix });
    closers.push(() => worker.close());
    for (const name of Object.keys(answers)) await runs.add(name, {}, { jobId: name, attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    await waitFor('the held run to be held', async () => (await runs.getJobState('held')) === 'failed');
    await ends('held', { ...result('succeeded', [3, 1]), accepted: { by: 'reviewer', at: new Date().toISOString(), why: null } });
    await segments.add('later', {}, { delay: 60_000 });
    await segments.add('now', {});

    const s = await waitFor(
      'every run outcome',
      async () => {
        const v = parseSamples(await registry.metrics());
        return Object.values(byOutcome(v, 'batch_scorer_runs_total')).reduce((a, b) => a + b) === 7 ? v : undefined;
      },
      20_000,
    );
    expect(byOutcome(s, 'batch_scorer_runs_total')).toEqual({ succeeded: 3, failed: 1, cancelled: 1, expired: 1, held: 1 });
    expect(byOutcome(s, 'batch_scorer_run_rows_total')).toEqual({ scored: 15, quarantined: 3 });
    expect(sample(s, 'batch_scorer_queue_jobs{queue="runs",state="completed"}')).toBe(3);
    expect(sample(s, 'batch_scorer_queue_jobs{queue="runs",state="failed"}')).toBe(4);
    expect(sample(s, 'batch_scorer_queue_jobs{queue="segments",state="delayed"}')).toBe(1);
    expect(sample(s, 'batch_scorer_queue_jobs{queue="segments",state="waiting"}')).toBe(1);
    expect(sample(s, 'batch_scorer_queue_jobs{queue="segments",state="waiting-children"}')).toBe(0);
    if (PROMTOOL) expect(await promtoolCheck(await registry.metrics())).toEqual({ code: 0, output: '' });
  });

  it('a scrape still answers while Redis does not, without queue depths', async () => {
    const registry = createMetricsRegistry();
    const port = await freePort();
    // Nothing listens there; a producer's connection gives up after a few tries.
    const connection = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true });
    connection.on('error', () => {}); // refused: the case under test
    const runs = new Queue(RUNS_QUEUE, { connection, prefix });
    runs.on('error', () => {});
    closers.push(() => Promise.resolve(connection.disconnect()));
    collectQueueDepths(registry, [runs]);
    const text = await registry.metrics();
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).not.toMatch(/^batch_scorer_queue_jobs\{/m);
  });
});
