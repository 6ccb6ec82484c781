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

  async clear(runId: string): Promise<void> {
    await this.redis.del(this.key(runId));
  }

  async segment(runId: string, index: number, rows: number, quarantined: number, done = false): Promise<void> {
    const fields: Record<string, number> = { [`r${index}`]: rows, [`q${index}`]: quarantined };
    if (done) fields[`d${index}`] = 1;
    await this.redis.hset(this.key(runId), fields);
  }

  /**
   * Why a run failed in one of its segments: BullMQ fails the parent with "child ... failed", which
   * tells a user nothing, so the segment's reason is kept here for `status`.
   */
  async fail(runId: string, reason: string): Promise<void> {
    await this.redis.hsetnx(this.key(runId), 'failure', reason);
  }

  async failure(runId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.key(runId), 'failure')) ?? undefined;
  }

  async read(runId: string): Promise<RunProgress | undefined> {
    const h = await this.redis.hgetall(this.key(runId));
    if (!h.rowsTotal) return undefined;
    let rowsDone = 0;
    let rowsQuarantined = 0;
    let segmentsDone = 0;
    for (const [k, v] of Object.entries(h)) {
      if (/^r\d/.test(k)) rowsDone += Number(v);
      else if (/^q\d/.test(k)) rowsQuarantined += Number(v);
      else if (/^d\d/.test(k)) segmentsDone += 1;
    }
    return computeProgress(
      { rowsDone, rowsTotal: Number(h.rowsTotal), rowsQuarantined, segmentsDone, segmentsTotal: Number(h.segmentsTotal) },
      rowsDone,
      Date.now() - Number(h.startedAt),
    );
  }
}
