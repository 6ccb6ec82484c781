/**
 * What the sections of one bench run share: sizes (quick, --full, env overrides, BENCH_SCALE),
 * the simulators and input files (each started or written once), runs another section can reuse,
 * and the connection figures the connections section reports.
 */
import { mkdir, rm } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { writeInput, type InputFormat } from './inputs.js';
import { startSimulator, type Simulator } from './simulator.js';

export const BENCH_DIR = '.bench';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A scoring run's connection figures, kept for the connections section. */
export interface ConnectionFigure {
  run: string;
  concurrency: number;
  requests: number;
  serviceConnections: number | null;
}

export class BenchContext {
  readonly inputsDir = `${BENCH_DIR}/inputs`;
  readonly runsDir = `${BENCH_DIR}/runs`;
  readonly connections: ConnectionFigure[] = [];
  private readonly simulators = new Map<string, Promise<Simulator>>();
  private readonly memos = new Map<string, Promise<unknown>>();

  constructor(
    readonly full: boolean,
    /** BENCH_SCALE: every row count is multiplied by it (smoke runs on a busy machine). */
    readonly scale: number,
  ) {}

  async prepare(): Promise<void> {
    await rm(this.inputsDir, { recursive: true, force: true });
    await rm(this.runsDir, { recursive: true, force: true });
    await mkdir(this.inputsDir, { recursive: true });
    await mkdir(this.runsDir, { recursive: true });
  }

  /** A row count: the env variable's if set, else the quick or --full default; scaled by BENCH_SCALE. */
  rows(envName: string, quick: number, full = quick): number {
    const asked = process.env[envName] ? Number(process.env[envName]) : this.full ? full : quick;
    return this.scaled(asked);
  }

  /** Row counts (comma-separated in the env variable), e.g. the sizes of the memory section. */
  rowList(envName: string, quick: number[], full: number[]): number[] {
    const asked = process.env[envName] ? process.env[envName].split(',').map(Number) : this.full ? full : quick;
    return asked.filter((n) => n > 0).map((n) => this.scaled(n));
  }

  /** A count scaled by BENCH_SCALE, at least 1000 (a segment's worth for the smallest segments). */
  scaled(rows: number): number {
    return Math.max(1000, Math.round(rows * this.scale));
  }

  /** The simulator with these flags, started at its first use and kept until close(). */
  simulator(flags: string[] = []): Promise<Simulator> {
    const key = flags.join(' ');
    if (!this.simulators.has(key)) this.simulators.set(key, startSimulator(flags));
    return this.simulators.get(key)!;
  }

  /** The input file of these rows in this format, written at its first use. */
  input(rows: number, format: InputFormat): Promise<string> {
    const path = `${this.inputsDir}/rentals-${rows}.${format}`;
    return this.memo(`input ${path}`, async () => {
      await writeInput(path, rows, format);
      return path;
    });
  }

  /** The result of `make` under `key`, computed once per bench run: sections reuse each other's runs. */
  memo<T>(key: string, make: () => Promise<T>): Promise<T> {
    if (!this.memos.has(key)) {
      const made = make();
      // A failed run is not kept: the next section asking tries again (and reports its own error).
      made.catch(() => this.memos.delete(key));
      this.memos.set(key, made);
    }
    return this.memos.get(key) as Promise<T>;
  }

  /** Whether Redis answers at REDIS_URL (asked once). */
  redisAnswers(): Promise<boolean> {
    return this.memo('redis', async () => {
      const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
      // The refused connection is the answer; without a listener ioredis prints it as unhandled.
      redis.on('error', () => undefined);
      try {
        await redis.connect();
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        redis.disconnect();
      }
    });
  }

  /** Stops the simulators and deletes the inputs and run folders. */
  async close(): Promise<void> {
    const started = await Promise.allSettled(this.simulators.values());
    await Promise.all(started.flatMap((s) => (s.status === 'fulfilled' ? [s.value.stop()] : [])));
    await rm(this.inputsDir, { recursive: true, force: true });
    await rm(this.runsDir, { recursive: true, force: true });
  }
}
