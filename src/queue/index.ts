/**
 * The queues (BullMQ on Redis): the only folder that knows them, with the composition roots
 * (src/app/). Others get here the names, records and handles they need, and the BullMQ types
 * they are handed (a Queue, a Job) as this folder's types.
 */

// The BullMQ handles other folders are given or pass on (dashboards, depths, schedules, processors).
export type { Job, JobSchedulerJson, Processor, Queue, QueueEvents } from 'bullmq';
export { findJob } from './find-job.js';

// The queues: their names, job options, retention and job data; Redis connections.
export {
  ATTEMPTS,
  redisConnection,
  RETENTION,
  runPriority,
  RUNS_QUEUE,
  SCHEDULES_QUEUE,
  segmentJobId,
  SEGMENTS_QUEUE,
  type QueueConfig,
  type QueueConnection,
  type RunJobData,
} from './queues.js';
export { redisTarget } from './redis-target.js';
export { againIfDropped, isDroppedCall, redisUnavailable } from './queue-connection.js';
export { RedisWatch } from './redis-watch.js';
export { OwnConnectionQueue } from './own-connection-queue.js';
export { toQueueError } from './to-queue-error.js';

// Submitting and following runs: the run queue (producer) and its reconnecting form.
export { runNotFound, RunQueue, type FileDropSubmission, type RunListOptions, type RunQueueCalls, type RunStatus, type RunSubmission } from './producer.js';
export { ReconnectingRunQueue } from './reconnecting-run-queue.js';
export type { IdempotentRequest } from './idempotency-keys.js';
export { readFailedAttempt, type FailedAttempt } from './failed-attempt.js';

// What runs tell while they run and when they end: progress, events, results.
export { RunProgressStore, type SegmentMark, type ThroughputSample } from './run-progress.js';
export { openRunEvents } from './run-events.js';
export { RUN_SETTLED_EVENT, settledResult } from './run-results.js';

// The worker, the other queues it takes (AlsoProcessed), and webhooks delivered through a queue.
export { startWorker } from './worker.js';
export { DEFAULT_WORKER_OPTIONS, type AlsoProcessed } from './worker-options.js';
export { queuedWebhooks } from './queued-webhooks.js';
