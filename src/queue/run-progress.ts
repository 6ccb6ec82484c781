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

  /**
   * A run's start; `rowsBefore` are the rows its segments finished before a resume, which count as
   * done but not towards its rate (scored in another run of it, they took none of this one's time).
   */
  async start(runId: string, rowsTotal: number, segmentsTotal: number, rowsBefore = 0): Promise<void> {
    const key = this.key(runId);
    await this.redis
      .multi()
      .hsetnx(key, 'startedAt', Date.now())
      .hsetnx(key, 'rowsBefore', rowsBefore)
      .hset(key, { rowsTotal, segmentsTotal })
      .expire(key, KEEP_SECONDS)
      .exec();
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

  /** The run's progress; `finishedAt` (epoch ms) for a run that has finished, see progressFromHash. */
  async read(runId: string, finishedAt?: number): Promise<RunProgress | undefined> {
    return progressFromHash(await this.redis.hgetall(this.key(runId)), Date.now(), finishedAt);
  }
}

/**
 * A run's progress from its hash, at `now`. The rate is over the run's own time: up to now while
 * it runs, up to `finishedAt` once it has finished, so that it stays what it was instead of
 * falling as the clock goes on. A finished run with rows left (a failed one) has no ETA.
 */
export function progressFromHash(h: Record<string, string>, now: number, finishedAt?: number): RunProgress | undefined {
  if (!h.rowsTotal) return undefined;
  let rowsDone = 0;
  let rowsQuarantined = 0;
  let segmentsDone = 0;
  for (const [k, v] of Object.entries(h)) {
    if (/^r\d/.test(k)) rowsDone += Number(v);
    else if (/^q\d/.test(k)) rowsQuarantined += Number(v);
    else if (/^d\d/.test(k)) segmentsDone += 1;
  }
  const counts = { rowsDone, rowsTotal: Number(h.rowsTotal), rowsQuarantined, segmentsDone, segmentsTotal: Number(h.segmentsTotal) };
  const progress = computeProgress(counts, rowsDone - Number(h.rowsBefore ?? 0), (finishedAt ?? now) - Number(h.startedAt));
  return finishedAt !== undefined && progress.etaSeconds !== 0 ? { ...progress, etaSeconds: null } : progress;
}
