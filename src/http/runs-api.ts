import type { RunOptionsInput } from '../config/run-options.js';
import type { EnqueueAnswer } from '../queue/idempotency-keys.js';
import type { EnqueueOptions, FileDropSubmission, RunListOptions, RunStatus, RunSubmission } from '../queue/producer.js';
import type { QueueConfig } from '../queue/queues.js';
import { RunQueueHolder } from '../queue/run-queue-holder.js';

/**
 * What the run API needs of the queue; RunQueue (src/queue/producer.ts) is one. Errors are
 * BatchScorerErrors: E_USAGE for a bad submission, E_RUN_NOT_FOUND for an unknown run,
 * E_RUN_CONFLICT for a run in a state that does not allow the request, E_REDIS_UNAVAILABLE.
 */
export interface RunsApi {
  /** With an Idempotency-Key, E_IDEMPOTENCY_KEY_REUSED and E_IDEMPOTENCY_IN_PROGRESS too (see RunQueue.enqueue). */
  enqueue(submission: RunSubmission, options?: Pick<EnqueueOptions, 'idempotency'>): Promise<EnqueueAnswer & { replayed?: true }>;
  /** Starts the run of a file version exactly once (see RunQueue.enqueueFileDrop). */
  enqueueFileDrop(submission: FileDropSubmission): Promise<{ runId: string; created: boolean }>;
  /** The run, or undefined when no run of this id is on the queue. */
  get(runId: string): Promise<RunStatus | undefined>;
  /** The most recent runs, newest first; with `state`, only those in that state; with `pipeline`, only those that pipeline started. */
  list(options?: RunListOptions): Promise<RunStatus[]>;
  /** Cancels a waiting or active run; answers its status (`cancelling` while its jobs stop, then `cancelled`). */
  cancel(runId: string): Promise<RunStatus>;
  /** Enqueues a failed, cancelled or expired run again, keeping the segments it finished, under the caps given (none: uncapped). */
  resume(runId: string, caps?: Pick<RunOptionsInput, 'maxRequests' | 'maxRows' | 'deadline'>): Promise<{ runId: string; resumed: true }>;
}

/**
 * The run API over a RunQueue made once Redis first answers a PING, and made again if its
 * connection failed at first: RunQueue's first wait for Redis is final, and `serve` outlives a
 * Redis that is away at its start. Every call pings first, so that while Redis is away the API
 * answers 503 at once instead of after the producer's retries.
 */
export function lazyRunQueue(config: QueueConfig, pingRedis: () => Promise<void>): { api: RunsApi; close(): Promise<void> } {
  const holder = new RunQueueHolder(config);
  const call = async <T>(fn: (runs: RunsApi) => Promise<T>): Promise<T> => {
    await pingRedis();
    return holder.use(fn);
  };
  return {
    api: {
      enqueue: (submission, options) => call((runs) => runs.enqueue(submission, options)),
      enqueueFileDrop: (submission) => call((runs) => runs.enqueueFileDrop(submission)),
      get: (runId) => call((runs) => runs.get(runId)),
      list: (options) => call((runs) => runs.list(options)),
      cancel: (runId) => call((runs) => runs.cancel(runId)),
      resume: (runId, caps) => call((runs) => runs.resume(runId, caps)),
    },
    close: () => holder.close(),
  };
}
