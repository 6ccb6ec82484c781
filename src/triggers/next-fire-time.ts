import { CronExpressionParser } from 'cron-parser';
import type { ScheduledPipeline } from './pipelines.js';

/**
 * When a scheduled pipeline fires next after `now`, as its BullMQ job scheduler computes it
 * (bullmq's defaultRepeatStrategy: cron-parser's next time after the current one, in the
 * schedule's time zone). Undefined when the cron has no later time.
 */
export function nextFireTime(schedule: ScheduledPipeline['schedule'], now: Date): Date | undefined {
  const interval = CronExpressionParser.parse(schedule.cron, { tz: schedule.tz, currentDate: now });
  return interval.hasNext() ? interval.next().toDate() : undefined;
}
