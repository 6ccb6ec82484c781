/**
 * 13. Redis memory of finished runs: 1,000 tiny runs (3 rows, one segment each) through a real
 * `worker` process against the simulator, with RETENTION_JOBS=100, on a Redis of its own (a
 * redis-server started on a free port, so no other client moves its figures). Every 100 finished
 * runs: INFO memory's used_memory, and MEMORY USAGE summed over the keys that name a run (its jobs
 * and the keys it keeps beside them) and over the queues' event streams. The runs' keys should
 * stop growing once 100 runs are kept; the event streams grow up to BullMQ's bound (10,000 entries
 * each) whatever the retention, and are reported apart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RunQueue } from '../../src/queue/producer.js';
import { cliCommand, MODEL } from '../cli.js';
import { workerStarted } from '../queue-run.js';
import type { Section, SectionReport } from '../report.js';

const EVERY = 100;
/** BENCH_REDIS_RUNS (1000): the runs, a multiple of EVERY. */
const RUNS = Math.max(EVERY, Math.round(Number(process.env.BENCH_REDIS_RUNS ?? 1000) / EVERY) * EVERY);
const KEPT = 100;
const PREFIX = '{bs-bench-redis}';
/** The bound docs/retention.md gives on the Redis a finished run of one segment keeps. */
const BYTES_PER_RUN_BOUND = 12 * 1024;
const KIB = 1024;

/** One look at the Redis: its used_memory, and what the runs' keys and the event streams take. */
interface Sample {
  runs: number;
  usedMemory: number;
  runKeysBytes: number;
  runsWithKeys: number;
  streamsBytes: number;
  keys: number;
}

export const redisMemory: Section = {
  id: 'redis-memory',
  // Run when named (BENCH_SECTIONS=redis-memory): Redis's footprint over 1,000 runs, apart from the scoring path.
  onlyWhenNamed: true,
  title: 'Redis memory of finished runs under retention',
  async run(ctx, report) {
    const port = await freePort();
    const server = await startRedis(port).catch((err: unknown) => err as Error);
    if (server instanceof Error) return report.note(`skipped: no redis-server to start (${server.message})`);
    const redisUrl = `redis://127.0.0.1:${port}`;
    const redis = new Redis(redisUrl);
    const out = `${ctx.runsDir}/redis-memory`;
    const sim = await ctx.simulator();
    const input = await ctx.input(3, 'csv');
    const env = {
      ...process.env,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: PREFIX,
      MODEL_SERVICE_URL: sim.url,
      RETENTION_JOBS: String(KEPT),
      JOBS_DIR: '/nonexistent',
      LOG_LEVEL: 'info',
    };
    const [node, ...args] = cliCommand('worker');
    const worker = spawn(node, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    const queue = new RunQueue({ redisUrl, prefix: PREFIX });
    try {
      await workerStarted(worker);
      report.note(`${RUNS} runs of 3 rows (one segment each), one worker, RETENTION_JOBS=${KEPT}, a redis-server of its own; a look every ${EVERY} runs`);
      const before = await sample(redis, 0);
      const samples: Sample[] = [before];
      for (let done = 0; done < RUNS; done += EVERY) {
        const ids = Array.from({ length: EVERY }, (_, i) => `m-${String(done + i).padStart(4, '0')}`);
        for (const runId of ids) await queue.enqueue({ input, model: MODEL, out, options: { runId } });
        await untilFinished(out, ids);
        samples.push(await sample(redis, done + EVERY));
      }
      // The worker's sweep takes the keys of the last runs whose jobs were removed within seconds.
      const settledAt = Date.now();
      while ((await sample(redis, RUNS)).runsWithKeys > KEPT && Date.now() - settledAt < 60_000) await sleep(200);
      const settled = await sample(redis, RUNS);
      reportSamples(report, samples, settled, (Date.now() - settledAt) / 1000);
      report.raw.push({ samples, settled, breakdown: await breakdown(redis) });
    } finally {
      await queue.close();
      worker.kill('SIGTERM');
      if (worker.exitCode === null) await once(worker, 'exit');
      redis.disconnect();
      server.kill('SIGTERM');
      await once(server, 'exit');
      await rm(out, { recursive: true, force: true });
    }
  },
};

function reportSamples(report: SectionReport, samples: Sample[], settled: Sample, settleSeconds: number): void {
  for (const s of samples) {
    report.note(
      `after ${s.runs} runs: used_memory ${(s.usedMemory / KIB / KIB).toFixed(2)} MiB; keys of runs ${(s.runKeysBytes / KIB).toFixed(1)} KiB (${s.runsWithKeys} runs); event streams ${(s.streamsBytes / KIB).toFixed(1)} KiB; ${s.keys} keys`,
    );
  }
  const at = (runs: number) => samples.find((s) => s.runs === runs)!;
  const without = (s: Sample) => s.usedMemory - s.streamsBytes;
  report.figure('bytes a finished run keeps (one segment), MEMORY USAGE', settled.runKeysBytes / settled.runsWithKeys, 'B', { atMost: BYTES_PER_RUN_BOUND });
  report.figure(`runs with keys after ${RUNS} runs`, settled.runsWithKeys, '', { atMost: KEPT });
  report.figure('seconds for the sweep to take the last removed runs’ keys', settleSeconds, 's');
  report.figure(`used_memory before the runs`, at(0).usedMemory / KIB / KIB, 'MiB');
  report.figure(`used_memory after ${RUNS} runs`, settled.usedMemory / KIB / KIB, 'MiB');
  report.figure(`event streams after ${RUNS} runs`, settled.streamsBytes / KIB, 'KiB');
  report.figure(`keys of runs, ${2 * EVERY} to ${RUNS} runs`, (at(RUNS).runKeysBytes - at(2 * EVERY).runKeysBytes) / KIB, 'KiB', { atMost: 64 });
  const half = Math.round(RUNS / 2 / EVERY) * EVERY;
  report.figure(`used_memory but event streams, ${half} to ${RUNS} runs`, (without(at(RUNS)) - without(at(half))) / KIB, 'KiB', { atMost: 512 });
}

/** used_memory, and MEMORY USAGE over the keys naming a run (`m-NNNN`) and over the event streams. */
async function sample(redis: Redis, runs: number): Promise<Sample> {
  const info = await redis.info('memory');
  const usedMemory = Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
  const named = new Set<string>();
  let runKeysBytes = 0;
  let streamsBytes = 0;
  let keys = 0;
  for await (const batch of redis.scanStream({ match: `${PREFIX}*`, count: 1000 }) as AsyncIterable<string[]>) {
    for (const key of batch) {
      keys += 1;
      const bytes = (await redis.memory('USAGE', key, 'SAMPLES', 0)) ?? 0;
      const run = /:(m-\d{4})/.exec(key)?.[1];
      if (run !== undefined) {
        named.add(run);
        runKeysBytes += bytes;
      } else if (key.endsWith(':events')) streamsBytes += bytes;
    }
  }
  return { runs, usedMemory, runKeysBytes, runsWithKeys: named.size, streamsBytes, keys };
}

/** The bytes of each kind of key a kept run has, summed over the runs kept. */
async function breakdown(redis: Redis): Promise<Record<string, number>> {
  const kinds: Record<string, number> = {};
  for (const key of await redis.keys(`${PREFIX}*`)) {
    const kind = key.replace(PREFIX, '').replace(/m-\d{4}(\.\d+\.seg-\d+)?/, '<run>');
    if (!kind.includes('<run>')) continue;
    kinds[kind] = (kinds[kind] ?? 0) + ((await redis.memory('USAGE', key, 'SAMPLES', 0)) ?? 0);
  }
  return kinds;
}

/** Waits for every run's `_SUCCESS`: their jobs may be gone by then (RETENTION_JOBS), their folders are not. */
async function untilFinished(out: string, ids: string[]): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (let left = ids; left.length > 0; left = left.filter((id) => !existsSync(`${out}/${id}/_SUCCESS`))) {
    if (Date.now() > deadline) throw new Error(`${left.length} runs did not finish within 5 minutes (first: ${left[0]})`);
    await sleep(50);
  }
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A redis-server without persistence on `port`, as the deployment docs ask it (noeviction), answering. */
async function startRedis(port: number): Promise<ChildProcess> {
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
    {
      stdio: 'ignore',
    },
  );
  const failed = once(server, 'error').then(([err]) => Promise.reject(err as Error));
  // Raced below while it starts; an error after that is the kill at the section's end.
  failed.catch(() => undefined);
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  probe.on('error', () => undefined);
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const answered = await Promise.race([
        probe.ping().then(
          (r) => r === 'PONG',
          () => false,
        ),
        failed,
      ]);
      if (answered) return server;
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within 10 s`);
      await sleep(50);
    }
  } finally {
    probe.disconnect();
  }
}
