import { z } from 'zod';
import { VALUE_BYTES, excerpt } from '../text-excerpt.js';

/**
 * A failed attempt of a run job, as the worker records it in the job's log (failedAttemptLine),
 * so that `enqueue --wait` and `status --watch` say each as it happens: BullMQ itself keeps the
 * last failure's reason alone, and nothing of when it tries again.
 */
export const failedAttemptSchema = z.object({
  /** The attempt that failed, from 1. */
  attempt: z.int().min(1),
  /** The attempts the job may take in all. */
  attempts: z.int().min(1),
  /** Its error code (`E_SERVICE_UNREACHABLE`, ...; E_INTERNAL for an error without one). */
  code: z.string(),
  /** Why, on one line, at most VALUE_BYTES. */
  reason: z.string(),
  /** When the job is tried again (ISO 8601), as its backoff says; null when this was its last attempt. */
  retryAt: z.iso.datetime().nullable(),
});
export type FailedAttempt = z.output<typeof failedAttemptSchema>;

/** What starts a job log line that records a failed attempt; its JSON (failedAttemptSchema) follows. */
export const FAILED_ATTEMPT_PREFIX = 'attempt failed: ';

/** The job log line of a failed attempt; `reason` is made one line and bounded here. */
export function failedAttemptLine(attempt: FailedAttempt): string {
  const reason = excerpt(attempt.reason.replace(/\s*[\r\n]+\s*/g, ' '), VALUE_BYTES);
  return `${FAILED_ATTEMPT_PREFIX}${JSON.stringify({ ...attempt, reason })}`;
}

/** The failed attempt a job log line records; undefined for any other line (a milestone) or one that does not parse. */
export function readFailedAttempt(line: string): FailedAttempt | undefined {
  if (!line.startsWith(FAILED_ATTEMPT_PREFIX)) return undefined;
  try {
    return failedAttemptSchema.safeParse(JSON.parse(line.slice(FAILED_ATTEMPT_PREFIX.length))).data;
  } catch {
    return undefined;
  }
}
