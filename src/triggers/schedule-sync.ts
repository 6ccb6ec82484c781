import { isDeepStrictEqual } from 'node:util';
import { ATTEMPTS, type JobSchedulerJson, type Queue, RETENTION } from '../queue/index.js';
import type { ScheduledPipeline } from './pipelines.js';
import { SCHEDULED_RUN_JOB, scheduleTemplate, type ScheduleTemplate } from './schedule-template.js';

/**
 * The options of each fired job: retried when enqueueing its run fails for a passing reason, kept
 * as runs are. Here, where schedulers are written, so that the template (which `schedule list`
 * reads) loads no queue code.
 */
export const SCHEDULED_RUN_JOB_OPTS = { ...ATTEMPTS.schedules, ...RETENTION.schedules };

/** What a sync did to one scheduler. */
export type ScheduleChange = 'added' | 'updated' | 'unchanged' | 'removed';

/** One scheduler after a sync: its id (the pipeline's name), what was done, and (unless removed) its cron and next fire time. */
export interface ScheduleSyncResult {
  id: string;
  change: ScheduleChange;
  cron?: string;
  tz?: string;
  /** Its next fire time, in ms since the epoch. */
  next?: number;
}

/**
 * Makes the job schedulers of the schedules queue match the scheduled pipelines exactly: one
 * scheduler per pipeline, under its name, firing `scheduled-run` jobs whose data is the
 * pipeline's template; schedulers no pipeline declares are removed.
 *
 * A scheduler that already matches is left as it is: upserting it again would replace its next
 * job (BullMQ's addJobScheduler removes the delayed job and adds it anew), and one already due but
 * not yet taken would be dropped for the following fire time. Safe to run again and again, and
 * from several processes at once: each upsert is one Redis script that replaces the scheduler
 * and its next job together, so concurrent syncs leave one scheduler and one next job per
 * pipeline (each may report the same scheduler added); removals are idempotent.
 */
export async function syncSchedules(queue: Queue, pipelines: readonly ScheduledPipeline[]): Promise<ScheduleSyncResult[]> {
  const existing = new Map((await queue.getJobSchedulers(0, -1, true)).map((s) => [s.key, s]));
  const results: ScheduleSyncResult[] = [];
  for (const p of pipelines) {
    const { cron, tz } = p.schedule;
    const template = scheduleTemplate(p);
    const was = existing.get(p.name);
    if (was && matches(was, template)) {
      results.push({ id: p.name, change: 'unchanged', cron, tz, next: was.next });
      continue;
    }
    const job = await queue.upsertJobScheduler(p.name, { pattern: cron, tz }, { name: SCHEDULED_RUN_JOB, data: template, opts: SCHEDULED_RUN_JOB_OPTS });
    results.push({ id: p.name, change: was ? 'updated' : 'added', cron, tz, next: job?.opts.prevMillis });
  }
  const declared = new Set(pipelines.map((p) => p.name));
  for (const id of existing.keys()) {
    if (declared.has(id)) continue;
    await queue.removeJobScheduler(id);
    results.push({ id, change: 'removed' });
  }
  return results;
}

/** Whether a scheduler fires as the template says, with the job name, data and options a sync gives it. */
function matches(scheduler: JobSchedulerJson, template: ScheduleTemplate): boolean {
  return (
    scheduler.name === SCHEDULED_RUN_JOB &&
    scheduler.pattern === template.cron &&
    scheduler.tz === template.tz &&
    scheduler.every === undefined &&
    isDeepStrictEqual(scheduler.template?.data, template) &&
    isDeepStrictEqual(scheduler.template?.opts, SCHEDULED_RUN_JOB_OPTS)
  );
}
