import { durationMs } from './duration.js';

/** An ISO 8601 time with its offset (`2026-11-26T06:00:00Z`, `2026-11-26T07:00:00+01:00`): a time without one would be read in each process's zone. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** What a --deadline that is neither a duration nor a time must be (said after its flag or field). */
export const DEADLINE_FORMAT = 'must be a duration such as 90s, 30m or 2h, or an ISO 8601 time with its offset such as 2026-11-26T06:00:00Z';

/**
 * A run's --deadline as the absolute time it means, in ISO 8601 (UTC), or undefined when `text`
 * is neither a duration nor a time. A duration counts from `now`, the run's start: stored as a
 * time, the deadline means the same to a resume or to a worker that reads the run later.
 */
export function deadlineTime(text: string, now = Date.now()): string | undefined {
  // A whole number of seconds, minutes or hours (`90s`, `30m`, `2h`).
  const duration = durationMs(text, ['s', 'm', 'h']);
  if (duration !== undefined) return new Date(now + duration).toISOString();
  if (!ISO_TIME.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : new Date(at).toISOString();
}
