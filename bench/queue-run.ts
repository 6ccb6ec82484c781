/**
 * One timed queue run: worker processes on a fresh queue prefix (so no earlier run's jobs or
 * workers interfere), one run enqueued, timed from the enqueue call to the run's completion,
 * planning and assembly included.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { RunOptionsInput } from '../src/config/run-options.js';
import { RunQueue } from '../src/queue/producer.js';
import { cliCommand, MODEL } from './cli.js';
import { REDIS_URL } from './context.js';
import { takeRunFolder, type RunFacts } from './run-folder.js';

export interface QueueRunResult {
  runId: string;
  workers: number;
  seconds: number;
  facts: RunFacts;
}

/** Polled this often: the run's end is seen at most this late (100 ms would blur short runs). */
const POLL_MS = 20;
let prefixes = 0;

export async function queueRun(p: {
  workers: number;
  /** Flags of `batch-scorer worker`, e.g. --max-in-flight 4. */
  workerFlags?: string[];
  serviceUrl: string;
  input: string;
  out: string;
  options: RunOptionsInput;
  env?: Record<string, string>;
  /** How the run's manifest is read; by default from the local folder `<out>/<runId>`, deleted after. */
  readFacts?: (runId: string) => Promise<RunFacts>;
}): Promise<QueueRunResult> {
  const prefix = `{bs-bench-${process.pid}-${++prefixes}}`;
  const queue = new RunQueue({ redisUrl: REDIS_URL, prefix });
  // LOG_LEVEL info: "worker started" is an info line.
  const env = { ...process.env, ...p.env, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'info' };
  const [node, ...args] = cliCommand('worker', ...(p.workerFlags ?? []));
  const children = Array.from({ length: p.workers }, () => spawn(node, args, { stdio: ['ignore', 'ignore', 'pipe'], env }));
  try {
    // The clock starts once every worker listens: process start-up is not the run's time.
    await Promise.all(children.map(workerStarted));
    const started = process.hrtime.bigint();
    const { runId } = await queue.enqueue({ input: p.input, model: MODEL, out: p.out, options: { service: p.serviceUrl, ...p.options } });
    for (;;) {
      const s = await queue.get(runId);
      if (s?.state === 'failed' || s?.state === 'cancelled') throw new Error(`queue run ${s.state}: ${s.failedReason ?? ''}`);
      if (s?.state === 'succeeded') break;
      await setTimeout(POLL_MS);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const facts = await (p.readFacts ?? ((id: string) => takeRunFolder(p.out, id)))(runId);
    return { runId, workers: p.workers, seconds, facts };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => once(c, 'exit')));
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** Resolves when the worker logs "worker started"; rejects if it exits first. */
export function workerStarted(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let log = '';
    let started = false;
    // Its log is read to the end (dropped once started), so a full pipe never blocks the worker.
    child.stderr!.on('data', (chunk: Buffer) => {
      if (started) return;
      log = (log + chunk.toString()).slice(-2000);
      if (log.includes('worker started')) {
        started = true;
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`worker exited ${code} before it started: ${log.trim()}`)));
  });
}

/** The queue's keys under this prefix, deleted: a bench leaves nothing in Redis. */
async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
