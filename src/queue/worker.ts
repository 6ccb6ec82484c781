import { Worker } from 'bullmq';
import { AbortedError } from '../errors.js';
import type { Logger } from '../log.js';
import { runShutdownSteps, type ShutdownStep } from '../shutdown-steps.js';
import type { Storage } from '../storage/index.js';
import { keptJobs, RUNS_QUEUE, SEGMENTS_QUEUE, WORKER_ID, redisConnection, type QueueConfig, type RunJobData, type SegmentJobData } from './queues.js';
import { RedisWatch } from './redis-watch.js';
import { redisTarget } from './redis-target.js';
import { runJobProcessor } from './run-job.js';
import { segmentJobProcessor } from './segment-job.js';
import { WorkerContext } from './worker-context.js';
import type { WorkerOptions } from './worker-options.js';

/** Once the shutdown timeout has passed, how long handing in-flight segments back may take before the connections are dropped. */
const HAND_BACK_MS = 5_000;

/** A running worker; `close()` is the graceful shutdown and is safe to call twice. */
export interface ScoringWorker {
  /**
   * Stops taking work, lets in-flight segments finish for up to shutdownTimeoutMs, then hands
   * them back. If Redis is away by then, nothing can be handed back: the connections are
   * dropped (their segments go back to the queue when their locks expire) and close() resolves,
   * though BullMQ may leave timers behind; a process should exit after it.
   */
  close(): Promise<void>;
}

/**
 * Starts a worker process's BullMQ workers: runs (plan, then assemble once every segment is
 * done), segments (score one segment into storage), and those of `options.alsoProcess`. Any number of processes on any machines
 * share the work through Redis. It logs "worker started" once connected; until then, and
 * whenever Redis is away, it waits for it and says so (see RedisWatch). A REDIS_URL or
 * QUEUE_PREFIX that cannot work fails the start (E_CONFIG, exit 2).
 */
export function startWorker(queue: QueueConfig, storage: Storage, log: Logger, options: WorkerOptions): ScoringWorker {
  redisTarget(queue);
  const redis = redisConnection(queue, 'worker');
  const ctx = new WorkerContext(redis, queue, storage, log, options, options.observer);
  const common = {
    connection: redis,
    prefix: queue.prefix,
    // Jobs record who took them (`processedBy`), which the run pages show.
    name: WORKER_ID,
    lockDuration: options.lockDurationMs,
    stalledInterval: Math.max(1_000, options.lockDurationMs / 2),
    maxStalledCount: 10,
  };
  const watch = new RedisWatch(redis, log);
  const kept = keptJobs(options.retention ?? {});
  const runsWorker = new Worker<RunJobData>(RUNS_QUEUE, runJobProcessor(ctx), { ...common, concurrency: 2, ...kept.runs });
  for (const ended of ['completed', 'failed'] as const) runsWorker.on(ended, () => ctx.keySweeps.jobEnded());
  // One segment at a time, more only while those held drain: SegmentIntake raises the concurrency.
  const segmentsWorker = new Worker<SegmentJobData>(SEGMENTS_QUEUE, ctx.segmentIntake.around(segmentJobProcessor(ctx)), {
    ...common,
    concurrency: 1,
    ...kept.segments,
  });
  ctx.segmentIntake.steer(segmentsWorker);
  const also = options.alsoProcess ?? [];
  const alsoWorkers = also.map(
    (a) => new Worker(a.queue, a.processor, { ...common, concurrency: a.concurrency ?? 1, settings: { backoffStrategy: a.backoffStrategy } }),
  );
  const workers = [runsWorker, segmentsWorker, ...alsoWorkers];
  const onError = (err: Error) => watch.error(err);
  for (const w of workers) {
    w.on('error', onError);
    // BullMQ only reports a lock it could not renew: the job is another worker's now (it was
    // taken as stalled) or gone (its keys vanished in a Redis restart without persistence). Its
    // processor is stopped through the job's signal, so that it sends no more predict requests
    // for work that is no longer its own, and records nothing of it (see WorkerContext.lockLost).
    w.on('lockRenewalFailed', (jobIds) => {
      for (const id of jobIds) w.cancelJob(id, `the lock of job ${id} was lost: another worker took it over, or it vanished from Redis`);
    });
  }
  ctx.runsQueue.on('error', onError);
  ctx.segmentsQueue.on('error', onError);
  let closing: Promise<void> | undefined;
  let started = false;
  Promise.all(workers.map((w) => w.waitUntilReady())).then(
    () => {
      if (closing) return;
      started = true;
      log.info(
        { worker: WORKER_ID, redis: redis.shownUrl, prefix: queue.prefix, maxInFlight: options.maxInFlight, segments: options.segments },
        'worker started',
      );
    },
    () => {}, // closed before Redis answered
  );

  return {
    close: () =>
      (closing ??= (async () => {
        log.info({ timeoutMs: options.shutdownTimeoutMs }, 'shutting down: taking no more work');
        let dropped: () => void = () => {};
        const droppedConnections = new Promise<void>((resolve) => (dropped = resolve));
        // BullMQ's close and QUIT wait for Redis; while it is away, for ever. Past the timeout
        // (and the time to hand segments back, if Redis is there to take them), the connections go.
        const drop = (why: string) => {
          log.warn({ redis: redis.shownUrl }, why);
          watch.stop();
          redis.disconnectAll();
          dropped();
        };
        // A worker that never reached Redis has no work to finish or hand back.
        if (!started) drop('Redis never answered: connections dropped');
        let dropTimer: NodeJS.Timeout | undefined;
        const timer = setTimeout(() => {
          log.warn('shutdown timeout: handing in-flight segments back');
          ctx.shutdown.abort(new AbortedError('worker shutting down'));
          if (redis.status !== 'ready') drop('Redis is away: connections dropped; segments in flight go back to the queue when their locks expire');
          else dropTimer = setTimeout(() => drop('shutdown did not finish in time: connections dropped'), HAND_BACK_MS);
        }, options.shutdownTimeoutMs);
        // Cleanups run in reverse order of opening, each even when one before it failed.
        const steps: ShutdownStep[] = [
          ['workers', () => Promise.all(workers.map((w) => w.close()))],
          ['queues and service clients', () => ctx.close()],
          ['what the other queues hold', () => Promise.all(also.map((a) => a.close()))],
          [
            'redis',
            () => {
              watch.stop();
              return redis.close();
            },
          ],
        ];
        const cleanups = runShutdownSteps(steps, log);
        await Promise.race([cleanups, droppedConnections]);
        clearTimeout(timer);
        clearTimeout(dropTimer);
        log.info('worker stopped');
      })()),
  };
}
