import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import { runOptionsSchema } from '../config/index.js';
import type { IdempotentRequest } from '../queue/index.js';
import type { runSubmissionSchema } from './run-schemas.js';

/** The header `POST /runs` honours, as the answers name it. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** Marks an answer given again for its Idempotency-Key (the status and body are the first answer's). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** Characters a key may have at most: a UUID takes 36, and a key is kept in Redis for a day. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * `POST /runs`'s headers: an Idempotency-Key is 1 to MAX_IDEMPOTENCY_KEY_LENGTH printable ASCII
 * characters; anything else is 400 naming the header, never echoing it.
 */
export const idempotencyHeadersSchema = z.object({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .regex(new RegExp(`^[\\x20-\\x7e]{1,${MAX_IDEMPOTENCY_KEY_LENGTH}}$`), `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`)
    .optional()
    .describe(
      'sent again within 24 h with the same submission (the same fields, in any order), answers the first answer again (status and body: the same runId) and starts no other run; with another submission, 422. One per deployment; dry runs keep nothing',
    ),
});

/** `POST /runs`'s answer headers: whether it is the first answer given again. */
export const replayedHeaders = {
  [REPLAYED_HEADER]: z.literal('true').describe('true when this is the first answer of the Idempotency-Key given again'),
};

/**
 * A submission's Idempotency-Key (checked by idempotencyHeadersSchema) and the hash of what it
 * asks, or undefined without the header.
 */
export function idempotencyOf(headers: IncomingHttpHeaders, submission: z.output<typeof runSubmissionSchema>, sent: unknown): IdempotentRequest | undefined {
  const key = headers[IDEMPOTENCY_HEADER.toLowerCase()];
  return typeof key === 'string' ? { key, bodyHash: submissionHash(submission, sent) } : undefined;
}

/**
 * The sha256 of a submission as parsed, in a canonical JSON (object members sorted): bodies that
 * differ only in member order, in whitespace, or in writing out an option's default ask the same
 * run and hash alike; `sent` is the body as sent, for its deadline. `dryRun` is left out: dry runs are never kept.
 */
export function submissionHash(submission: z.output<typeof runSubmissionSchema>, sent: unknown): string {
  const { dryRun: _dry, ...asked } = submission;
  // A --deadline duration parses to a time counted from now: hashed as sent, or the same body sent again would not hash alike.
  const deadline = (sent as { options?: { deadline?: unknown } } | null | undefined)?.options?.deadline;
  const options = { ...(asked.options ?? runOptionsSchema.parse({})), ...(deadline !== undefined && { deadline }) };
  const canonical = JSON.stringify({ ...asked, options }, sortedMembers);
  return createHash('sha256').update(canonical).digest('hex');
}

/** A JSON.stringify replacer writing every object's members in code-point order of their names. */
function sortedMembers(_name: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
