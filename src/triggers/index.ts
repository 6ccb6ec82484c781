/**
 * What starts runs besides a command: jobs/*.yaml pipelines, their schedules, S3 events and
 * polled folders (file drops). What writes schedules to the queue or takes fired jobs is loaded
 * when used: `pipelines check` and `status` load no queue code.
 */

// Declared pipelines, and the check a worker makes of a run naming one.
export { loadPipelines, loadPipelinesIfPresent, pipelineNameSchema, type FileDropPipeline, type Pipeline, type ScheduledPipeline } from './pipelines.js';
export { pipelineRunCheck } from './pipeline-run-check.js';

// Schedules: the next fire time, and the schedulers as the queue holds them.
export { nextFireTime } from './next-fire-time.js';
export { zonedIso } from './zoned-time.js';
export { listSchedules, type ScheduleView } from './schedule-list.js';
export type { ScheduleSyncResult } from './schedule-sync.js';
/** What writes the schedulers (`schedule sync`) and turns their fired jobs into runs (a worker). */
export async function loadScheduleWriters() {
  const [{ syncSchedules }, { scheduledRuns }] = await Promise.all([import('./schedule-sync.js'), import('./scheduled-run.js')]);
  return { syncSchedules, scheduledRuns };
}

// File drops: S3 event notifications (`serve`) and polled folders (`watch`).
export { fileDropsOfEvent, s3EventSchema } from './s3-event.js';
export { pollDrops, watchDrops } from './drop-poller.js';
