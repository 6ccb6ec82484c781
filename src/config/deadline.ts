/** A duration as --deadline takes it: a whole number of seconds, minutes or hours (`90s`, `30m`, `2h`). */
const DURATION = /^(\d{1,9})(s|m|h)$/;

/** An ISO 8601 time with its offset (`2026-11-26T06:00:00Z`, `2026-11-26T07:00:00+01:00`): a time without one would be read in each process's zone. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000 } as const;

/** What a --deadline that is neither a duration nor a time must be (said after its flag or field). */
export const DEADLINE_FORMAT = 'must be a duration such as 90s, 30m or 2h, or an ISO 8601 time with its offset such as 2026-11-26T06:00:00Z';

/**
 * A run's --deadline as the absolute time it means, in ISO 8601 (UTC), or undefined when `text`
 * is neither a duration nor a time. A duration counts from `now`, the run's start: stored as a
 * time, the deadline means the same to a resume or to a worker that reads the run later.
 */
export function deadlineTime(text: string, now = Date.now()): string | undefined {
  const duration = DURATION.exec(text);
  if (duration) return new Date(now + Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS]).toISOString();
  if (!ISO_TIME.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : new Date(at).toISOString();
}
