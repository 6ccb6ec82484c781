import { isDeepStrictEqual } from 'node:util';
import { type AlsoProcessed, type Job, type Processor, type ReconnectingRunQueue, type RunQueue, SCHEDULES_QUEUE, toQueueError } from '../queue/index.js';
import { BatchScorerError } from '../errors.js';
import type { Logger } from '../log.js';
import { fillDateTemplate } from './date-template.js';
import { excerpt } from '../text-excerpt.js';
import type { Pipeline, ScheduledPipeline } from './pipelines.js';
import { scheduleTemplate, scheduleTemplateSchema, type ScheduleTemplate } from './schedule-template.js';
import { scheduledRunId } from './scheduled-run-id.js';

/** What a fired job did, kept as its return value: the run it made, or found made by an earlier take of the same firing. */
export interface ScheduledRunResult {
  runId: string;
  created: boolean;
  /** The input with its date placeholders filled. */
  input: string;
}

/**
 * Turns a job a pipeline's scheduler fired into that pipeline's run, as the pipeline is declared
 * in this worker's jobs folder (`pipelines`): the job names the pipeline and BullMQ gives its fire
 * time; everything else (model, input, output, options) is the declaration's, never the job's, so
 * a job anyone wrote to Redis can start only the run a declared schedule would, for some fire time.
 * A job naming no scheduled pipeline of the folder is refused (E_NOT_ALLOWED) and starts nothing.
 * The input's `{date}` placeholders are filled for the fire time in the schedule's time zone, the
 * run id derived from the pipeline and the fire time, enqueued with `ifEnded: 'keep'`. The same
 * firing taken again (a retried job) finds its run enqueued and makes no second one, even when that
 * run failed. Whether the input exists is the run's to find out: a missing one fails the run at
 * once (E_INPUT_NOT_FOUND, naming the filled location), not this job.
 */
export function scheduledRunProcessor(runs: Pick<RunQueue, 'enqueue'>, pipelines: readonly Pipeline[], log: Logger): Processor<unknown, ScheduledRunResult> {
  return async (job) => {
    const { pipeline, model, input: template, output, options, cron, tz } = declaredTemplate(job, pipelines, log);
    const fireTime = fireTimeOf(job);
    const runId = scheduledRunId(pipeline, fireTime);
    const input = fillDateTemplate(template, fireTime, tz);
    const trigger = { kind: 'schedule', pipeline, fireTime: fireTime.toISOString(), cron, tz } as const;
    const runLog = log.child({ pipeline, runId, fireTime: trigger.fireTime, jobId: job.id });
    try {
      // The options as declared: enqueue checks them as flags are, and the worker defaults the rest.
      const { created } = await runs.enqueue({ input, model, out: output, options: { ...options, runId }, trigger }, { ifEnded: 'keep' });
      runLog.info({ input }, created ? 'scheduled run enqueued' : 'scheduled run enqueued before, by an earlier take of this firing; not again');
      return { runId, created, input };
    } catch (err) {
      runLog.error({ err }, 'scheduled run not enqueued');
      throw toQueueError(err);
    }
  };
}

/**
 * The template of the scheduled pipeline of the jobs folder a fired job names; a job that names
 * none is refused (logged, E_NOT_ALLOWED). A job whose template is not the declaration's (the
 * folder changed since `schedule sync`, or the job was written by hand) is run as declared, with
 * a warning.
 */
function declaredTemplate(job: Job, pipelines: readonly Pipeline[], log: Logger): ScheduleTemplate {
  const parsed = scheduleTemplateSchema.safeParse(job.data);
  const name = parsed.data?.pipeline;
  const declared = pipelines.find((p): p is ScheduledPipeline => p.kind === 'schedule' && p.name === name);
  if (!declared) {
    const named = name === undefined ? 'no pipeline' : `pipeline ${excerpt(name, 100)}`;
    const refusal = new BatchScorerError(
      'E_NOT_ALLOWED',
      `fired job ${excerpt(job.id ?? '?', 200)} names ${named}, which the jobs folder does not declare with a schedule: no run started; run schedule sync again`,
    );
    log.error({ jobId: excerpt(job.id ?? '?', 200), reason: refusal.message }, 'fired job refused');
    throw toQueueError(refusal);
  }
  const template = scheduleTemplate(declared);
  if (!isDeepStrictEqual(parsed.data, template)) {
    log.warn({ pipeline: declared.name, jobId: job.id }, 'the fired job is not the pipeline as declared: run schedule sync; its run is made as declared');
  }
  return template;
}

/** The time a fired job was due: BullMQ's job schedulers set it as `opts.prevMillis` (and name the job `repeat:<scheduler id>:<millis>`). */
function fireTimeOf(job: Job): Date {
  const millis = job.opts.prevMillis;
  if (millis === undefined)
    throw toQueueError(new BatchScorerError('E_CONFIG', `job ${excerpt(job.id ?? '?', 200)} was not fired by a job scheduler: it has no fire time`));
  return new Date(millis);
}

/**
 * The schedules queue as a worker process takes it (see WorkerOptions.alsoProcess): each fired
 * job turned into its run (scheduledRunProcessor) on the run queue given, made again after a Redis
 * outage met at its first call (a RunQueue's first wait is final), and closed once the worker
 * takes no more jobs. Every worker process with a jobs folder takes fired jobs; a firing is taken
 * by one of them, and by another again only if that one died with it.
 */
export function scheduledRuns(runs: ReconnectingRunQueue, pipelines: readonly Pipeline[], log: Logger): AlsoProcessed {
  return { queue: SCHEDULES_QUEUE, processor: scheduledRunProcessor(runs, pipelines, log.child({ queue: SCHEDULES_QUEUE })), close: () => runs.close() };
}
