import type { Queue } from '../queue/index.js';
import { formatIssues } from '../config/index.js';
import { scheduleTemplateSchema, type ScheduleTemplate } from './schedule-template.js';
import { zonedIso } from './zoned-time.js';

/** A job scheduler of the schedules queue, as `schedule list` shows it. */
export interface ScheduleView {
  /** The scheduler's id: the name of the pipeline it fires for. */
  id: string;
  cron?: string;
  tz: string;
  /** The next fire time, ISO 8601 in UTC. */
  next?: string;
  /** The same moment on the schedule's own clock, with its offset (`2026-11-24T02:00:00+01:00`). */
  nextLocal?: string;
  /** What each fired job makes a run of (its input with placeholders unfilled). */
  template?: ScheduleTemplate;
  /** Why its template could not be read (a scheduler not made by `schedule sync`, or by another release). */
  problem?: string;
}

/** The schedulers of the schedules queue, soonest first, with their templates as stored (validated). */
export async function listSchedules(queue: Queue): Promise<ScheduleView[]> {
  const schedulers = await queue.getJobSchedulers(0, -1, true);
  return schedulers.map((s) => {
    const tz = s.tz ?? 'UTC';
    const parsed = scheduleTemplateSchema.safeParse(s.template?.data);
    return {
      id: s.key,
      ...(s.pattern ? { cron: s.pattern } : {}),
      tz,
      ...(s.next === undefined ? {} : { next: new Date(s.next).toISOString(), nextLocal: zonedIso(new Date(s.next), tz) }),
      ...(parsed.success ? { template: parsed.data } : { problem: `its template is not a scheduled pipeline's: ${formatIssues(parsed.error)}` }),
    };
  });
}
