import { Worker } from 'bullmq';
import { AbortedError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { Storage } from '../storage/storage-types.js';
import { RUNS_QUEUE, SEGMENTS_QUEUE, WORKER_ID, redisConnection, type QueueConfig, type RunJobData, type SegmentJobData } from './queues.js';
import { runJobProcessor } from './run-job.js';
import { segmentJobProcessor } from './segment-job.js';
import { WorkerContext } from './worker-context.js';
import type { WorkerOptions } from './worker-options.js';

/** A running worker; `close()` is the graceful shutdown and is safe to call twice. */
export interface ScoringWorker {
  /** Stops taking work, lets in-flight segments finish for up to shutdownTimeoutMs, then hands them back. */
  close(): Promise<void>;
}

/**
 * Starts a worker process's two BullMQ workers: runs (plan, then assemble once every segment is
 * done) and segments (score one segment into storage). Any number of processes on any machines
 * share the work through Redis.
 */
export function startWorker(queue: QueueConfig, storage: Storage, log: Logger, options: WorkerOptions): ScoringWorker {
  const redis = redisConnection(queue.redisUrl, 'worker');
  const ctx = new WorkerContext(redis, queue, storage, log, options);
  const common = {
    connection: redis,
    prefix: queue.prefix,
    lockDuration: options.lockDurationMs,
    stalledInterval: Math.max(1_000, options.lockDurationMs / 2),
    maxStalledCount: 10,
  };
  const runsWorker = new Worker<RunJobData>(RUNS_QUEUE, runJobProcessor(ctx), { ...common, concurrency: 2 });
  const segmentsWorker = new Worker<SegmentJobData>(SEGMENTS_QUEUE, segmentJobProcessor(ctx), { ...common, concurrency: options.segments });
  for (const w of [runsWorker, segmentsWorker]) w.on('error', (err) => log.error({ err: errorMessage(err) }, 'queue error (retrying)'));
  log.info({ worker: WORKER_ID, prefix: queue.prefix, concurrency: options.concurrency, segments: options.segments }, 'worker started');

  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        log.info({ timeoutMs: options.shutdownTimeoutMs }, 'shutting down: taking no more work');
        const timer = setTimeout(() => {
          log.warn('shutdown timeout: handing in-flight segments back');
          ctx.shutdown.abort(new AbortedError('worker shutting down'));
        }, options.shutdownTimeoutMs);
        // Cleanups run in reverse order of opening, each even when one before it failed.
        const steps: [string, () => Promise<unknown>][] = [
          ['workers', () => Promise.all([runsWorker.close(), segmentsWorker.close()])],
          ['queues and service clients', () => ctx.close()],
          ['redis', () => redis.quit()],
        ];
        for (const [name, step] of steps) {
          try {
            await step();
          } catch (err) {
            log.error({ err: errorMessage(err), step: name }, 'shutdown step failed');
          }
        }
        clearTimeout(timer);
        log.info('worker stopped');
      })()),
  };
}
