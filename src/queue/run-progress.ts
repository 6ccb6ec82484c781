import type { RedisClient } from './queue-connection.js';
import { computeProgress, type RunProgress } from '../scoring/index.js';

const KEEP_SECONDS = 7 * 24 * 3600;

/** How often a run's throughput is sampled at most (a run page's chart needs no finer grain). */
export const SAMPLE_EVERY_MS = 2_000;
/** Samples kept per run, the newest: two hours at one per SAMPLE_EVERY_MS, about 70 kB. */
const SAMPLES_KEPT = 3_600;

/** A point of a run's throughput history: its rows done (all segments) at `t` (epoch ms). */
export interface ThroughputSample {
  t: number;
  rowsDone: number;
}

/** A segment as the progress hash knows it: rows scored so far (quarantined included), and whether it finished. */
export interface SegmentMark {
  rows: number;
  quarantined: number;
  done: boolean;
}

/**
 * Appends `t,rowsDone` to the samples list unless the last sample is younger than the interval;
 * the final sample of a run (`ARGV[4]` = 1) is always taken, once. Atomic, so any number of
 * workers reporting at once add one sample per interval between them.
 */
const SAMPLE_SCRIPT = `
local last = redis.call('lindex', KEYS[1], -1)
if last then
  local t, rows = string.match(last, '^(%d+),(%d+)$')
  if ARGV[4] == '1' then
    if rows == ARGV[2] then return 0 end
  elseif tonumber(ARGV[1]) - tonumber(t) < tonumber(ARGV[3]) then
    return 0
  end
end
redis.call('rpush', KEYS[1], ARGV[1] .. ',' .. ARGV[2])
redis.call('ltrim', KEYS[1], -tonumber(ARGV[5]), -1)
redis.call('expire', KEYS[1], ARGV[6])
return 1
`;

/**
 * Sets a segment's counts in a run's progress hash, and keeps their sum of quarantined rows in
 * `quarantined`, so that a run's error allowance is checked in one step however many segments it
 * has. With an allowance, a sum past it leaves `overBudget` in the hash for good (the field keeps
 * its older name: hashes of runs in flight hold it). Answers whether it is there. KEYS[1] is the hash; ARGV: the segment's index, its quarantined rows, its rows done
 * ('' leaves them), '1' when it is done, the run's allowance ('' for no check).
 */
const SEGMENT_SCRIPT = `
local q = 'q' .. ARGV[1]
local total = redis.call('hincrby', KEYS[1], 'quarantined', tonumber(ARGV[2]) - tonumber(redis.call('hget', KEYS[1], q) or '0'))
redis.call('hset', KEYS[1], q, ARGV[2])
if ARGV[3] ~= '' then redis.call('hset', KEYS[1], 'r' .. ARGV[1], ARGV[3]) end
if ARGV[4] == '1' then redis.call('hset', KEYS[1], 'd' .. ARGV[1], '1') end
if ARGV[5] ~= '' and total > tonumber(ARGV[5]) then redis.call('hset', KEYS[1], 'overBudget', '1') end
return redis.call('hexists', KEYS[1], 'overBudget')
`;

/** A run's progress hash, `<prefix>:progress:<runId>`. */
export const progressKey = (prefix: string, runId: string) => `${prefix}:progress:${runId}`;

/** A run's throughput samples, beside its progress hash under the same prefix, so both sit on one Redis Cluster slot. */
export const samplesKey = (prefix: string, runId: string) => `${prefix}:progress:${runId}:samples`;

/**
 * A run's progress, summed over its segments in a Redis hash: each segment sets (not adds) its own
 * rows done and quarantined, so a segment scored again after a crash does not count twice. The
 * quarantined rows are also the run's error allowance (see RunErrorAllowance).
 */
export class RunProgressStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(runId: string): string {
    return progressKey(this.prefix, runId);
  }

  private samplesKey(runId: string): string {
    return samplesKey(this.prefix, runId);
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
    await this.sample(runId, { rowsDone: rowsBefore, rowsTotal });
  }

  async clear(runId: string): Promise<void> {
    await this.redis.del(this.key(runId), this.samplesKey(runId));
  }

  /**
   * Records the run's rows done for its throughput history, at most once per SAMPLE_EVERY_MS
   * whoever reports; the run's last rows are always recorded, so the history ends where it did.
   */
  async sample(runId: string, progress: Pick<RunProgress, 'rowsDone' | 'rowsTotal'>, now = Date.now()): Promise<void> {
    const final = progress.rowsDone >= progress.rowsTotal ? 1 : 0;
    await this.redis.eval(SAMPLE_SCRIPT, 1, this.samplesKey(runId), now, progress.rowsDone, SAMPLE_EVERY_MS, final, SAMPLES_KEPT, KEEP_SECONDS);
  }

  async segment(runId: string, index: number, rows: number, quarantined: number, done = false): Promise<void> {
    await this.redis.eval(SEGMENT_SCRIPT, 1, this.key(runId), index, quarantined, rows, done ? 1 : 0, '');
  }

  /**
   * Sets a segment's quarantined rows so far, and answers whether the run, all segments together,
   * has been past `allowed` (now, or at any time before: a segment tried again starts its count
   * over, but the run was past its allowance all the same).
   */
  async quarantined(runId: string, index: number, rows: number, allowed: number): Promise<boolean> {
    return (await this.redis.eval(SEGMENT_SCRIPT, 1, this.key(runId), index, rows, '', 0, allowed)) === 1;
  }

  /** Whether the run has been past its error allowance: its segments stop, and it fails. */
  async pastAllowance(runId: string): Promise<boolean> {
    return (await this.redis.hexists(this.key(runId), 'overBudget')) === 1;
  }

  /**
   * A failed run's quarantined rows, per segment, as its errors.jsonl holds them (see
   * keepQuarantinedRows): segments stopped midway may have reported fewer, or not at all.
   */
  async keepQuarantined(runId: string, bySegment: readonly number[]): Promise<void> {
    const key = this.key(runId);
    const fields = Object.fromEntries(bySegment.map((rows, i) => [`q${i}`, rows]));
    const total = bySegment.reduce((sum, rows) => sum + rows, 0);
    await this.redis
      .multi()
      .hset(key, { ...fields, quarantined: total })
      .expire(key, KEEP_SECONDS)
      .exec();
  }

  /**
   * Why a run failed in one of its segments: BullMQ fails the parent with "child ... failed", which
   * tells a user nothing, so the segment's reason is kept here for `status`. True for the first
   * segment to fail the run (its siblings may fail it too): the one whose reason is kept.
   */
  async fail(runId: string, reason: string): Promise<boolean> {
    return (await this.redis.hsetnx(this.key(runId), 'failure', reason)) === 1;
  }

  async failure(runId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.key(runId), 'failure')) ?? undefined;
  }

  /** The run's progress; `finishedAt` (epoch ms) for a run that has finished, see progressFromHash. */
  async read(runId: string, finishedAt?: number): Promise<RunProgress | undefined> {
    return progressFromHash(await this.redis.hgetall(this.key(runId)), Date.now(), finishedAt);
  }

  /** What a run page shows: the progress, each segment's mark (none before the run is planned), and the throughput history, oldest first. */
  async details(runId: string, finishedAt?: number): Promise<{ progress?: RunProgress; segments: SegmentMark[]; samples: ThroughputSample[] }> {
    const [hash, list] = await Promise.all([this.redis.hgetall(this.key(runId)), this.redis.lrange(this.samplesKey(runId), 0, -1)]);
    const progress = progressFromHash(hash, Date.now(), finishedAt);
    return { ...(progress ? { progress } : {}), segments: segmentsFromHash(hash), samples: samplesFromList(list) };
  }
}

/** Each segment's mark, from the `r<i>`, `q<i>` and `d<i>` fields of a run's progress hash. */
export function segmentsFromHash(h: Record<string, string>): SegmentMark[] {
  const total = Number(h.segmentsTotal ?? 0);
  return Array.from({ length: Number.isInteger(total) && total > 0 ? total : 0 }, (_, i) => ({
    rows: Number(h[`r${i}`] ?? 0),
    quarantined: Number(h[`q${i}`] ?? 0),
    done: h[`d${i}`] !== undefined,
  }));
}

/** The samples list's `t,rowsDone` entries; anything else (it is Redis, anyone may write) is skipped. */
export function samplesFromList(list: string[]): ThroughputSample[] {
  return list.flatMap((entry) => {
    const m = /^(\d+),(\d+)$/.exec(entry);
    return m ? [{ t: Number(m[1]), rowsDone: Number(m[2]) }] : [];
  });
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
  for (const mark of segmentsFromHash(h)) {
    rowsDone += mark.rows;
    rowsQuarantined += mark.quarantined;
    if (mark.done) segmentsDone += 1;
  }
  const counts = { rowsDone, rowsTotal: Number(h.rowsTotal), rowsQuarantined, segmentsDone, segmentsTotal: Number(h.segmentsTotal) };
  const progress = computeProgress(counts, rowsDone - Number(h.rowsBefore ?? 0), (finishedAt ?? now) - Number(h.startedAt));
  return finishedAt !== undefined && progress.etaSeconds !== 0 ? { ...progress, etaSeconds: null } : progress;
}
