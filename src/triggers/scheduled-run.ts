import { UnrecoverableError, type Job, type Processor } from 'bullmq';
import { formatIssues, type RunOptionsInput } from '../config/run-options.js';
import type { Logger } from '../log.js';
import type { RunQueue } from '../queue/producer.js';
import type { ReconnectingRunQueue } from '../queue/reconnecting-run-queue.js';
import { SCHEDULES_QUEUE } from '../queue/queues.js';
import { toQueueError } from '../queue/to-queue-error.js';
import type { AlsoProcessed } from '../queue/worker-options.js';
import { fillDateTemplate } from './date-template.js';
import { scheduleTemplateSchema } from './schedule-template.js';
import { scheduledRunId } from './scheduled-run-id.js';

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
      runLog.error({ err }, 'scheduled run not enqueued');
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

/**
 * The schedules queue as a worker process takes it (see WorkerOptions.alsoProcess): each fired
 * job turned into its run (scheduledRunProcessor) on the run queue given, made again after a Redis
 * outage met at its first call (a RunQueue's first wait is final), and closed once the worker
 * takes no more jobs. Every worker process takes fired jobs;
 * a firing is taken by one of them, and by another again only if that one died with it.
 */
export function scheduledRuns(runs: ReconnectingRunQueue, log: Logger): AlsoProcessed {
  return { queue: SCHEDULES_QUEUE, processor: scheduledRunProcessor(runs, log.child({ queue: SCHEDULES_QUEUE })), close: () => runs.close() };
}
