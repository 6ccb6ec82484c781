import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, type JobType } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { RunQueue, type RunStatus } from '../../src/queue/producer.js';
import { SEGMENTS_QUEUE } from '../../src/queue/queues.js';
import type { SimulatorOptions } from '../../src/simulator/options.js';
import { createSimulator, type Simulator } from '../../src/simulator/server.js';
import { startCli } from './cli.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A queue prefix of its own for each test (with a hash tag, as in production). */
export function uniquePrefix(): string {
  return `{bs-test-${process.pid}-${Math.random().toString(16).slice(2, 10)}}`;
}

/** Deletes every key under a prefix. */
export async function dropPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const redis = new Redis(url);
  try {
    const keys: string[] = [];
    for await (const batch of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) keys.push(...batch);
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  } finally {
    redis.disconnect();
  }
}

/** A worker as a real child process, with its stderr kept for assertions. */
export interface WorkerProcess {
  child: ChildProcess;
  log: () => string;
  exited: Promise<number | null>;
}

export function startWorkerProcess(env: Record<string, string>, args: string[] = []): WorkerProcess {
  const { child, stderr, exited } = startCli(['worker', ...args], env);
  return { child, log: stderr, exited };
}

/** A TCP port nothing listens on (it was free a moment ago). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A Redis of a test's own. Persisting to disk (the default), it can be stopped and started again
 * on the same data; with `persist: false`, a restart comes back empty, as a Redis without
 * persistence does.
 */
export async function startRedis(port: number, dir: string, { persist = true }: { persist?: boolean } = {}): Promise<ChildProcess> {
  const persistence = persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, ...persistence, '--save', '', '--maxmemory-policy', 'noeviction'],
    { stdio: 'ignore' },
  );
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  probe.on('error', () => {}); // refused until the server is up: that is what is being waited for
  await waitFor(
    'redis to answer',
    () =>
      probe.ping().then(
        (r) => r === 'PONG',
        () => false,
      ),
    10_000,
  );
  probe.disconnect();
  return server;
}

/** Polls `check` until it answers a value, or fails after `ms` with what it was waiting for. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000, every = 50): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** A jobs folder that does not exist: a worker given it declares no pipelines. */
const NO_JOBS_DIR = '/nonexistent/batch-scorer-test-jobs';

/**
 * A queue test's world: its own prefix, a simulator (or a real server's URL), a producer, and the
 * worker processes it starts, all torn down after each test (workers killed, keys dropped).
 */
/** A settled run's reason as one line, `<message> [<code>]`, from its result (or, without one, the reason BullMQ kept). */
export function reasonOf(status: Pick<RunStatus, 'result' | 'failedReason'> | undefined): string | undefined {
  const error = status?.result?.error;
  return error ? `${error.message} [${error.code}]` : status?.failedReason;
}

export function useQueueFixture() {
  const f = {
    prefix: '',
    redisUrl: REDIS_URL,
    sim: undefined as unknown as Simulator,
    /** The service the workers call: the simulator's, or the one `setupService` named. */
    serviceUrl: '',
    queue: undefined as unknown as RunQueue,
    workers: [] as WorkerProcess[],
    async setup(simOptions: SimulatorOptions = {}, redisUrl = REDIS_URL) {
      f.sim = await createSimulator({ port: 0, ...simOptions });
      f.setupService(f.sim.url, redisUrl);
    },
    /** As setup, but the workers call a service already running (the real-server suite's MindsDB); no simulator. */
    setupService(url: string, redisUrl = REDIS_URL) {
      f.prefix = uniquePrefix();
      f.redisUrl = redisUrl;
      f.serviceUrl = url;
      f.queue = new RunQueue({ redisUrl, prefix: f.prefix });
    },
    env: () => ({ REDIS_URL: f.redisUrl, QUEUE_PREFIX: f.prefix, MODEL_SERVICE_URL: f.serviceUrl }),
    /**
     * A worker process with a short lock, so a killed worker's segments are taken over in seconds;
     * with no jobs folder unless `extra` names one (JOBS_DIR), so that what it runs never depends
     * on the jobs/ of the directory the tests run in.
     */
    worker: (args: string[] = [], extra: Record<string, string> = {}) => {
      const w = startWorkerProcess({ ...f.env(), JOBS_DIR: NO_JOBS_DIR, ...extra }, ['--lock-duration', '2000', ...args]);
      f.workers.push(w);
      return w;
    },
    /** Segment jobs in these states (still to run or running, by default), of every run under the test's prefix. */
    segmentJobs: async (states: JobType[] = ['active', 'waiting', 'delayed', 'prioritized']) => {
      const segments = new Queue(SEGMENTS_QUEUE, { connection: { url: f.redisUrl }, prefix: f.prefix });
      try {
        const counts = await segments.getJobCounts(...states);
        return Object.values(counts).reduce((a, b) => a + b, 0);
      } finally {
        await segments.close();
      }
    },
    finished: (runId: string, ms = 90_000) =>
      waitFor<RunStatus>(
        `run ${runId} to finish`,
        async () => {
          // While Redis restarts the producer's calls fail; keep asking.
          const s = await f.queue.get(runId).catch(() => undefined);
          return s && (s.state === 'succeeded' || s.state === 'failed' || s.state === 'expired' || s.state === 'held') ? s : undefined;
        },
        ms,
      ),
  };
  afterEach(async () => {
    if (process.env.DEBUG_WORKERS) for (const w of f.workers) console.log(w.log().slice(-3000));
    for (const w of f.workers.splice(0)) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    await f.queue?.close();
    await f.sim?.close();
    f.sim = undefined as unknown as Simulator;
    // A Redis a test started for itself goes with the test; only the shared one needs cleaning.
    if (f.prefix && f.redisUrl === REDIS_URL) await dropPrefix(f.prefix);
  });
  return f;
}
