import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { CLI } from './cli.js';

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
  const child = spawn(process.execPath, [CLI, 'worker', ...args], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d) => (log += d));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, log: () => log, exited };
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
