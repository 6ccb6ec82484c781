import type { Redis } from 'ioredis';
import { computeProgress, type RunProgress } from '../pipeline/progress.js';

const KEEP_SECONDS = 7 * 24 * 3600;

/**
 * A run's progress, summed over its segments in a Redis hash: each segment sets (not adds) its own
 * rows done, so a segment scored again after a crash does not count twice.
 */
export class RunProgressStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(runId: string): string {
    return `${this.prefix}:progress:${runId}`;
  }

  async start(runId: string, rowsTotal: number, segmentsTotal: number): Promise<void> {
    const key = this.key(runId);
    await this.redis.multi().hsetnx(key, 'startedAt', Date.now()).hset(key, { rowsTotal, segmentsTotal }).expire(key, KEEP_SECONDS).exec();
  }

  async segment(runId: string, index: number, rows: number, quarantined: number, done = false): Promise<void> {
    const fields: Record<string, number> = { [`r${index}`]: rows, [`q${index}`]: quarantined };
    if (done) fields[`d${index}`] = 1;
    await this.redis.hset(this.key(runId), fields);
  }

  async read(runId: string): Promise<RunProgress | undefined> {
    const h = await this.redis.hgetall(this.key(runId));
    if (!h.rowsTotal) return undefined;
    let rowsDone = 0;
    let rowsQuarantined = 0;
    let segmentsDone = 0;
    for (const [k, v] of Object.entries(h)) {
      if (k[0] === 'r' && k !== 'rowsTotal') rowsDone += Number(v);
      else if (k[0] === 'q') rowsQuarantined += Number(v);
      else if (k[0] === 'd') segmentsDone += 1;
    }
    return computeProgress(
      { rowsDone, rowsTotal: Number(h.rowsTotal), rowsQuarantined, segmentsDone, segmentsTotal: Number(h.segmentsTotal) },
      rowsDone,
      Date.now() - Number(h.startedAt),
    );
  }
}
