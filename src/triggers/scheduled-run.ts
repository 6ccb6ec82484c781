import { UnrecoverableError, Worker, type Job, type Processor } from 'bullmq';
import { formatIssues, type RunOptionsInput } from '../config/run-options.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { RunQueue } from '../queue/producer.js';
import { RedisWatch } from '../queue/redis-watch.js';
import { RunQueueHolder } from '../queue/run-queue-holder.js';
import { redisConnection, SCHEDULES_QUEUE, WORKER_ID, type QueueConfig } from '../queue/queues.js';
import { toQueueError } from '../queue/to-queue-error.js';
import { runShutdownSteps } from '../shutdown-steps.js';
import { fillDateTemplate } from './date-template.js';
import { scheduleTemplateSchema } from './schedule-template.js';
import { scheduledRunId } from './scheduled-run-id.js';

/** How long closing may wait for Redis before the connections are dropped: fired jobs take milliseconds. */
const CLOSE_MS = 5_000;

/** What a fired job did, kept as its return value: the run it made, or found made by an earlier take of the same firing. */
export interface ScheduledRunResult {
  runId: string;
  created: boolean;
  /** The input with its date placeholders filled. */
  input: string;
}

/**
 * Turns a job a pipeline's scheduler fired into that pipeline's run: the input's `{date}`
 * placeholders filled for the fire time in the schedule's time zone, the run id derived from the
 * pipeline and the fire time, enqueued with `ifEnded: 'keep'`. The same firing taken again (a
 * retried job) finds its run enqueued and makes no second one, even when that run failed.
 * Whether the input exists is the run's to find out: a missing one fails the run at once
 * (E_INPUT_NOT_FOUND, naming the filled location), not this job.
 */
export function scheduledRunProcessor(runs: Pick<RunQueue, 'enqueue'>, log: Logger): Processor<unknown, ScheduledRunResult> {
  return async (job) => {
    const parsed = scheduleTemplateSchema.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(
        `fired job ${job.id} does not carry a scheduled pipeline (${formatIssues(parsed.error)}); run schedule sync again [E_CONFIG]`,
      );
    }
    const { pipeline, model, input: template, output, options, cron, tz } = parsed.data;
    const fireTime = fireTimeOf(job);
    const runId = scheduledRunId(pipeline, fireTime);
    const input = fillDateTemplate(template, fireTime, tz);
    const trigger = { kind: 'schedule', pipeline, fireTime: fireTime.toISOString(), cron, tz } as const;
    const runLog = log.child({ pipeline, runId, fireTime: trigger.fireTime, jobId: job.id });
    try {
      // The options as declared: enqueue checks them as flags are, and the worker defaults the rest.
      const { created } = await runs.enqueue({ input, model, out: output, options: { ...(options as RunOptionsInput), runId }, trigger }, { ifEnded: 'keep' });
      runLog.info({ input }, created ? 'scheduled run enqueued' : 'scheduled run enqueued before, by an earlier take of this firing; not again');
      return { runId, created, input };
    } catch (err) {
      runLog.error({ err: errorMessage(err) }, 'scheduled run not enqueued');
      throw toQueueError(err);
    }
  };
}

/** The time a fired job was due: BullMQ's job schedulers set it as `opts.prevMillis` (and name the job `repeat:<scheduler id>:<millis>`). */
function fireTimeOf(job: Job): Date {
  const millis = job.opts.prevMillis;
  if (millis === undefined) throw new UnrecoverableError(`job ${job.id} was not fired by a job scheduler: it has no fire time [E_CONFIG]`);
  return new Date(millis);
}

/** The scheduled runs of a worker process; `close()` is safe twice. */
export interface ScheduledRuns {
  /** Stops taking fired jobs and lets the one in hand finish; drops the connections if Redis does not answer within seconds. */
  close(): Promise<void>;
}

/**
 * Takes the jobs schedulers fire on the schedules queue and turns each into its run (see
 * scheduledRunProcessor), on connections of its own beside the worker's. Every worker process
 * runs one; a firing is taken by one of them, and by another again only if that one died with it.
 */
export function startScheduledRuns(config: QueueConfig, log: Logger): ScheduledRuns {
  const schedulesLog = log.child({ queue: SCHEDULES_QUEUE });
  const redis = redisConnection(config.redisUrl, 'worker');
  // The worker's own watch already says when Redis is away and back, for the whole process; this
  // one keeps its connection's errors out of the log, save errors of the queue itself.
  const watch = new RedisWatch(redis, schedulesLog.child({}, { level: 'error' }));
  // Made again after a Redis outage met at its first call (a RunQueue's first wait is final).
  const runs = new RunQueueHolder(config);
  const enqueue: RunQueue['enqueue'] = (submission, options) => runs.use((queue) => queue.enqueue(submission, options));
  const worker = new Worker(SCHEDULES_QUEUE, scheduledRunProcessor({ enqueue }, schedulesLog), { connection: redis, prefix: config.prefix, name: WORKER_ID });
  worker.on('error', (err) => watch.error(err));
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        // BullMQ's close and QUIT wait for Redis, for ever while it is away: the connections go
        // at once when it is away now, else past CLOSE_MS. A fired job still held is taken again
        // once its lock expires, and makes no second run: its run id is derived.
        let dropped: () => void = () => {};
        const droppedConnections = new Promise<void>((resolve) => (dropped = resolve));
        const drop = () => {
          watch.stop();
          redis.disconnectAll();
          dropped();
        };
        if (redis.status !== 'ready') drop();
        const timer = setTimeout(() => {
          schedulesLog.warn({ redis: redis.shownUrl }, 'closing took too long: connections dropped');
          drop();
        }, CLOSE_MS);
        const cleanups = runShutdownSteps(
          [
            ['scheduled runs worker', () => worker.close()],
            ['run queue', () => runs.close()],
            [
              'schedules redis',
              () => {
                watch.stop();
                return redis.close();
              },
            ],
          ],
          schedulesLog,
        );
        await Promise.race([cleanups, droppedConnections]);
        clearTimeout(timer);
      })()),
  };
}
