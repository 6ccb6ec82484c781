/**
 * One timed queue run: worker processes on a fresh queue prefix (so no earlier run's jobs or
 * workers interfere), one run enqueued, timed from the enqueue call to the run's completion,
 * planning and assembly included.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
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
  /** Peak RSS (VmHWM, sampled every 20 ms) of each worker process started, in start order: a killed one's up to its end. */
  workerPeakRssMiB: number[];
  /** CPU seconds (user + system) of each worker process from the enqueue to the run's end (a killed one's to its end; a later one's from its start). */
  workerCpuSeconds: number[];
  /** The run ended failed and was resumed (`resumeFailed`). */
  resumed: boolean;
}

/** What `during` is handed: the run as it goes, and its workers. */
export interface RunningQueueRun {
  runId: string;
  /** The worker processes started so far, the first `workers` first. */
  children: ChildProcess[];
  /** Starts one more worker process with the same flags; resolves once it listens. */
  addWorker(): Promise<ChildProcess>;
  /** Whether the run has ended (succeeded, failed or cancelled). */
  ended(): boolean;
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
  /** Runs beside the run from its enqueue (e.g. kills a worker and starts another); its failure fails the run's measurement. */
  during?: (run: RunningQueueRun) => Promise<void>;
  /** A run that ends failed is resumed once (RunQueue.resume, what `batch-scorer resume` does) rather than thrown. */
  resumeFailed?: boolean;
}): Promise<QueueRunResult> {
  const prefix = `{bs-bench-${process.pid}-${++prefixes}}`;
  const queue = new RunQueue({ redisUrl: REDIS_URL, prefix });
  // LOG_LEVEL info: "worker started" is an info line.
  const env = { ...process.env, ...p.env, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'info' };
  const [node, ...args] = cliCommand('worker', ...(p.workerFlags ?? []));
  const children: ChildProcess[] = [];
  const gauges = new WorkerGauges();
  const spawnWorker = () => {
    const child = spawn(node, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    children.push(child);
    gauges.watch(child);
    return child;
  };
  let ended = false;
  try {
    // The clock starts once every worker listens: process start-up is not the run's time.
    await Promise.all(Array.from({ length: p.workers }, () => workerStarted(spawnWorker())));
    // Their CPU is counted from here: start-up is not the run's (a worker started later counts its own).
    gauges.sampleNow();
    gauges.startCounting();
    const started = process.hrtime.bigint();
    const { runId } = await queue.enqueue({ input: p.input, model: MODEL, out: p.out, options: { service: p.serviceUrl, ...p.options } });
    const addWorker = async () => {
      const child = spawnWorker();
      await workerStarted(child);
      return child;
    };
    const during = p.during?.({ runId, children, addWorker, ended: () => ended });
    // Its failure is thrown where it is awaited, once the run ends; until then it is not unhandled.
    during?.catch(() => undefined);
    let resumed = false;
    let seconds = 0;
    try {
      for (;;) {
        const s = await queue.get(runId);
        if (s?.state === 'failed' && p.resumeFailed && !resumed) {
          resumed = true;
          await queue.resume(runId);
        } else if (s?.state === 'failed' || s?.state === 'cancelled') throw new Error(`queue run ${s.state}: ${s.failedReason ?? ''}`);
        if (s?.state === 'succeeded') break;
        await setTimeout(POLL_MS);
      }
      seconds = Number(process.hrtime.bigint() - started) / 1e9;
      gauges.sampleNow();
    } finally {
      ended = true;
      await during;
    }
    const [workerPeakRssMiB, workerCpuSeconds] = [children.map((c) => gauges.peakMiB(c)), children.map((c) => gauges.cpuSeconds(c))];
    const facts = await (p.readFacts ?? ((id: string) => takeRunFolder(p.out, id)))(runId);
    return { runId, workers: p.workers, seconds, facts, workerPeakRssMiB, workerCpuSeconds, resumed };
  } finally {
    ended = true;
    gauges.stop();
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

/** What /proc tells of a worker process: its peak RSS so far (KiB) and the CPU it used (clock ticks), counted from `fromTicks`. */
interface Gauge {
  peakKiB: number;
  cpuTicks: number;
  fromTicks: number;
}

/** Clock ticks a second, the unit of /proc/<pid>/stat's utime and stime. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * The peak RSS and CPU of processes: /proc/<pid>/status VmHWM (the kernel's high-water mark) and
 * /proc/<pid>/stat utime + stime, read every 20 ms while each lives, the last values seen kept, as
 * bench/measure.ts does for one command; a killed process's are those of its last 20 ms. The
 * worker is node itself (`env` execs it), so its pid is the child's.
 */
class WorkerGauges {
  private readonly gauges = new Map<ChildProcess, Gauge>();
  private readonly timer = setInterval(() => {
    for (const child of this.gauges.keys()) {
      if (!alive(child)) continue;
      void Promise.all([readFile(`/proc/${child.pid}/status`, 'utf8'), readFile(`/proc/${child.pid}/stat`, 'utf8')]).then(
        ([status, stat]) => this.take(child, status, stat),
        () => undefined, // The process exited between two samples.
      );
    }
  }, 20);

  watch(child: ChildProcess): void {
    this.gauges.set(child, { peakKiB: 0, cpuTicks: 0, fromTicks: 0 });
  }

  /** CPU is counted from now on: what each process has used so far is left out. */
  startCounting(): void {
    for (const gauge of this.gauges.values()) gauge.fromTicks = gauge.cpuTicks;
  }

  /** Samples every live process now: the figures at the run's end, the workers still up. */
  sampleNow(): void {
    for (const child of this.gauges.keys()) {
      if (!alive(child)) continue;
      try {
        this.take(child, readFileSync(`/proc/${child.pid}/status`, 'utf8'), readFileSync(`/proc/${child.pid}/stat`, 'utf8'));
      } catch {
        // It exited meanwhile: its last sample stands.
      }
    }
  }

  /** The peak RSS seen of `child`, in MiB (one decimal). */
  peakMiB(child: ChildProcess): number {
    return Math.round((this.gauges.get(child)?.peakKiB ?? 0) / 102.4) / 10;
  }

  /** The CPU seconds (user + system) `child` had used at its last sample, since startCounting. */
  cpuSeconds(child: ChildProcess): number {
    const gauge = this.gauges.get(child);
    return gauge ? (gauge.cpuTicks - gauge.fromTicks) / CLOCK_TICKS : 0;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private take(child: ChildProcess, status: string, stat: string): void {
    const gauge = this.gauges.get(child)!;
    gauge.peakKiB = Math.max(gauge.peakKiB, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    // The fields after the command's name (in parentheses, which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    gauge.cpuTicks = Math.max(gauge.cpuTicks, Number(fields[11]) + Number(fields[12]));
  }
}

function alive(child: ChildProcess): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null;
}
