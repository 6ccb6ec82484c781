import { RUNS_LOOKED_AT } from './pipeline-baseline.js';
import { pipelineRunsKey } from './pipeline-runs.js';
import type { RedisClient } from './queue-connection.js';
import { RUNS_QUEUE } from './queues.js';
import { cancelKey } from './run-cancel.js';
import { capsKey } from './run-caps-store.js';
import { progressKey, samplesKey } from './run-progress.js';

/**
 * How long a run's entry is left alone once written: its job is added (or replaced, for a resume)
 * right after, and until then the entry has no job to find. Entries are timed by Redis's clock,
 * so the clocks of the machines that enqueue and sweep need not agree.
 */
const SETTLING_MS = 5_000;

/** Writes an entry (ARGV[1]) timed by Redis's clock, in ms. */
const TOUCH = `
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[1])
`;

/** Entries a sweep reads per round trip. */
const PAGE = 500;

/**
 * Deletes a run's keys beside its job and its entries in the index (KEYS[1]) and in its pipeline's
 * index of runs (KEYS[7], or KEYS[1] again for a run of no pipeline). With a score in ARGV[2], only
 * while its job (KEYS[2]) is gone and its entry still has that score, i.e. was not written again
 * by an enqueue since it was read; with '', at once. Its pipeline's entry goes unless it is among
 * the ARGV[4] newest (those a run's baseline is looked for among, see pipelineBaseline).
 * KEYS[3..6]: progress, samples, caps, cancel marker. ARGV: the index member, the score, the run id, the entries kept.
 */
const FORGET = `
if ARGV[2] ~= '' then
  if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
  if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) ~= tonumber(ARGV[2]) then return 0 end
end
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
redis.call('ZREM', KEYS[1], ARGV[1])
if KEYS[7] ~= KEYS[1] then
  local rank = redis.call('ZREVRANK', KEYS[7], ARGV[3])
  if rank and rank >= tonumber(ARGV[4]) then redis.call('ZREM', KEYS[7], ARGV[3]) end
end
return 1
`;

/**
 * The keys a run keeps in Redis beside its BullMQ jobs: its progress hash and throughput samples,
 * its caps hash and its cancel marker, and its entry in its pipeline's index of runs. They expire
 * on their own after days (see each store); a run whose job BullMQ removed (past RETENTION_JOBS)
 * would keep them till then, so the index `<prefix>:run-keys` (a sorted set of
 * `<runId>\n<pipeline>` by when the run was last enqueued) lets a worker's sweep find the runs
 * whose jobs are gone and delete their keys, and `runs prune` forget a run whole. Runs enqueued
 * by releases before it have no entry: their keys expire as they did.
 */
export class RunKeys {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** The index of runs that may keep keys beside their jobs. */
  get indexKey(): string {
    return `${this.prefix}:run-keys`;
  }

  /** Records a run as enqueued now, before its job is added or replaced (see SETTLING_MS). */
  async touch(runId: string, pipeline: string | undefined): Promise<void> {
    await this.redis.eval(TOUCH, 1, this.indexKey, member(runId, pipeline));
  }

  /** Deletes a run's keys beside its jobs and its index entries now, whatever its job (runs prune removes it first). */
  async forget(runId: string, pipeline: string | undefined): Promise<void> {
    await this.forgetIf(member(runId, pipeline), '', 0);
  }

  /**
   * Deletes the keys of every run whose job is gone (BullMQ removed it past its retention, or
   * someone did by hand), except runs enqueued in the last SETTLING_MS; answers how many. Reads
   * the whole index a page at a time: it holds about as many runs as the queue keeps jobs of.
   */
  async sweep(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    let removed = 0;
    for (let start = 0; ;) {
      const page = await this.redis.zrange(this.indexKey, start, start + PAGE - 1, 'WITHSCORES');
      const entries: { member: string; score: string }[] = [];
      for (let i = 0; i < page.length; i += 2) if (Number(page[i + 1]) <= now - SETTLING_MS) entries.push({ member: page[i], score: page[i + 1] });
      if (entries.length === 0) break;
      const found = await this.jobsExist(entries.map((e) => runOf(e.member)));
      let gone = 0;
      for (const [i, e] of entries.entries()) if (!found[i]) gone += await this.forgetIf(e.member, e.score, RUNS_LOOKED_AT + 1);
      removed += gone;
      // Past the page's last settled entry, every other is younger: the sweep is done.
      if (entries.length < page.length / 2 || page.length < 2 * PAGE) break;
      start += entries.length - gone;
    }
    return removed;
  }

  /** Whether each run's job exists, in one round trip. */
  private async jobsExist(runIds: string[]): Promise<boolean[]> {
    const pipeline = this.redis.pipeline();
    for (const runId of runIds) pipeline.exists(this.jobKey(runId));
    const answers = (await pipeline.exec()) ?? [];
    // A failed answer counts as a job that exists: nothing is deleted on a doubt.
    return answers.map(([err, n]) => err !== null || n === 1);
  }

  /** A run job's hash, as BullMQ names it: `<prefix>:<queue>:<jobId>`, the job id being the run id. */
  private jobKey(runId: string): string {
    return `${this.prefix}:${RUNS_QUEUE}:${runId}`;
  }

  private async forgetIf(entry: string, score: string, pipelineKept: number): Promise<number> {
    const runId = runOf(entry);
    const pipeline = entry.slice(runId.length + 1);
    const { prefix } = this;
    const keys = [
      this.indexKey,
      this.jobKey(runId),
      progressKey(prefix, runId),
      samplesKey(prefix, runId),
      capsKey(prefix, runId),
      cancelKey(prefix, runId),
      pipeline === '' ? this.indexKey : pipelineRunsKey(prefix, pipeline),
    ];
    return (await this.redis.eval(FORGET, keys.length, ...keys, entry, score, runId, pipelineKept)) as number;
  }
}

/** An index entry: the run id, then its pipeline (empty for none); run ids hold no line breaks. */
function member(runId: string, pipeline: string | undefined): string {
  return `${runId}\n${pipeline ?? ''}`;
}

function runOf(entry: string): string {
  return entry.slice(0, entry.indexOf('\n'));
}
