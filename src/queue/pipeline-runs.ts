import { MAX_KEPT_JOBS } from '../config/index.js';
import type { RedisClient } from './queue-connection.js';
import { RETENTION } from './queues.js';

/**
 * Runs kept per pipeline at most: as many as BullMQ may keep run jobs of all pipelines together
 * (completed and failed, by default or under RETENTION_JOBS), so trimming never hides a run the
 * queue still has. The workers' sweep (see RunKeys) drops those whose jobs are gone sooner.
 */
const KEEP = Math.max(RETENTION.runs.removeOnComplete.count + RETENTION.runs.removeOnFail.count, 2 * MAX_KEPT_JOBS);

/** A pipeline's index of runs, `<prefix>:pipeline-runs:<pipeline>`. */
export const pipelineRunsKey = (prefix: string, pipeline: string) => `${prefix}:pipeline-runs:${pipeline}`;

/**
 * The runs each pipeline of `jobs/*.yaml` started, newest first: the sorted set
 * `<prefix>:pipeline-runs:<pipeline>` of run ids scored by when they were enqueued. BullMQ lists
 * jobs by state, a slice of each, so "this pipeline's latest runs" cannot be read from it without
 * reading every job kept; this index answers it a page at a time. Ids whose jobs BullMQ removed
 * (past their retention) are dropped when a listing meets them.
 */
export class PipelineRuns {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(pipeline: string): string {
    return pipelineRunsKey(this.prefix, pipeline);
  }

  /** Records a run as enqueued now (again, for a resumed run: it moves to the top). */
  async add(pipeline: string, runId: string, at: number): Promise<void> {
    await this.redis
      .multi()
      .zadd(this.key(pipeline), at, runId)
      .zremrangebyrank(this.key(pipeline), 0, -KEEP - 1)
      .exec();
  }

  /** The run ids from the `start`th newest on (0-based), at most `count`. */
  page(pipeline: string, start: number, count: number): Promise<string[]> {
    return this.redis.zrevrange(this.key(pipeline), start, start + count - 1);
  }

  /** Forgets runs whose jobs are gone. */
  async drop(pipeline: string, runIds: readonly string[]): Promise<void> {
    if (runIds.length > 0) await this.redis.zrem(this.key(pipeline), ...runIds);
  }
}
