import { z } from 'zod';
import type { ScheduledPipeline } from './pipelines.js';

/** The name of the jobs a pipeline's scheduler fires on the schedules queue. */
export const SCHEDULED_RUN_JOB = 'scheduled-run';

/**
 * What each job a pipeline's scheduler fires carries, kept in Redis as the scheduler's template:
 * everything a worker needs to make the run, so workers need no `jobs/` folder of their own.
 */
export const scheduleTemplateSchema = z.object({
  /** The pipeline's name, also its scheduler's id. */
  pipeline: z.string(),
  model: z.string(),
  /** The input as declared, its `{date}` placeholders filled when the job fires. */
  input: z.string(),
  output: z.string(),
  /** Run options as declared; checked as flags are when the run is enqueued. */
  options: z.record(z.string(), z.unknown()),
  cron: z.string(),
  tz: z.string(),
});
export type ScheduleTemplate = z.output<typeof scheduleTemplateSchema>;

/** A scheduled pipeline's template. */
export function scheduleTemplate(p: ScheduledPipeline): ScheduleTemplate {
  return { pipeline: p.name, model: p.model, input: p.input, output: p.output, options: p.options, cron: p.schedule.cron, tz: p.schedule.tz };
}
