import type { RedisClient } from './queue-connection.js';
import { BatchScorerError } from '../errors.js';
import { RETENTION } from './queues.js';

/** A cancel marker is kept as long as the failed run job that ends a cancelled run. */
const KEEP_SECONDS = RETENTION.runs.removeOnFail.age;

/** The marker's value once none of the run's jobs runs any more (until then, the time of the cancel). */
const STOPPED = 'stopped';

/** A run's cancel: `requested` while some of its jobs may still run, `stopped` once none does. */
export type CancelMark = 'requested' | 'stopped';

/** A run's cancel marker, `<prefix>:cancelled:<runId>`. */
export const cancelKey = (prefix: string, runId: string) => `${prefix}:cancelled:${runId}`;

/**
 * Cancel markers: `<prefix>:cancelled:<runId>` exists once a run was cancelled, until it is
 * enqueued again. A marker rather than a message (BullMQ's Worker.cancelJob reaches only the
 * process running a job, its Relay is experimental): it also reaches jobs no worker has taken
 * yet, and workers that were away from Redis when it was set. Workers ask for it (CancelWatch).
 * Once a reader has found that none of the run's jobs runs (RunQueue), the marker says so: no job
 * of the run scores after that (each reads the marker before it starts), so the run stays
 * `cancelled` even while a worker takes its run job only to end it.
 */
export class RunCancels {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(runId: string): string {
    return cancelKey(this.prefix, runId);
  }

  async mark(runId: string): Promise<void> {
    await this.redis.set(this.key(runId), Date.now(), 'EX', KEEP_SECONDS);
  }

  async clear(runId: string): Promise<void> {
    await this.redis.del(this.key(runId));
  }

  async has(runId: string): Promise<boolean> {
    return (await this.redis.exists(this.key(runId))) === 1;
  }

  /** The run's cancel, undefined when it was not cancelled. */
  async read(runId: string): Promise<CancelMark | undefined> {
    const value = await this.redis.get(this.key(runId));
    return value === null ? undefined : value === STOPPED ? 'stopped' : 'requested';
  }

  /** Records that none of the run's jobs runs any more; a marker cleared meanwhile (a resume) is not made again. */
  async stopped(runId: string): Promise<void> {
    await this.redis.set(this.key(runId), STOPPED, 'KEEPTTL', 'XX');
  }

  /** Which of these runs were cancelled, in one round trip. */
  async which(runIds: readonly string[]): Promise<string[]> {
    if (runIds.length === 0) return [];
    const marks = await this.redis.mget(...runIds.map((id) => this.key(id)));
    return runIds.filter((_, i) => marks[i] !== null);
  }
}

/** What a cancelled run ends with: its run job's reason and its manifest's error. */
export function cancelledError(runId: string): BatchScorerError {
  return new BatchScorerError(
    'E_CANCELLED',
    `run ${runId} was cancelled; batch-scorer resume ${runId} (or enqueueing it again under its run id) resumes it, keeping the segments it finished`,
  );
}
