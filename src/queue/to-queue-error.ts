import { UnrecoverableError } from 'bullmq';
import { BatchScorerError, errorMessage } from '../errors.js';
import { excerpt, excerptStack, MESSAGE_BYTES } from '../text-excerpt.js';

/**
 * An error as BullMQ should treat it: a permanent one (unknown model, bad input, error threshold)
 * becomes UnrecoverableError, so the job fails at once; anything else is retried with backoff.
 * The code stays in the message, for people reading BullMQ's own views; the run's state and code are kept as data (see keepRunResult). BullMQ keeps the
 * message as the job's failed reason and each attempt's stack in Redis: both come out bounded.
 */
export function toQueueError(err: unknown): Error {
  if (err instanceof BatchScorerError && !err.retriable) return new UnrecoverableError(`${err.message} [${err.code}]`);
  if (err instanceof BatchScorerError) return new Error(`${err.message} [${err.code}]`, { cause: err });
  return err instanceof Error ? boundedError(err) : new Error(errorMessage(err));
}

/**
 * `err` itself when its message and stack are within bounds (see text-excerpt.ts), else an Error
 * of the same name (an UnrecoverableError stays one) carrying them bounded, with `err` as its
 * cause: BatchScorerErrors bound their own messages, but a library's error may quote what it was given.
 */
function boundedError(err: Error): Error {
  const message = excerpt(err.message, MESSAGE_BYTES);
  const stack = err.stack === undefined ? undefined : excerptStack(err.stack);
  if (message === err.message && stack === err.stack) return err;
  const bounded = err instanceof UnrecoverableError ? new UnrecoverableError(message) : new Error(message, { cause: err });
  bounded.name = err.name;
  if (stack !== undefined) bounded.stack = stack;
  return bounded;
}

/** True when this failure is the job's last: BullMQ will not try it again. */
export function isFinalFailure(err: Error, attemptsMade: number, attempts: number | undefined): boolean {
  return err instanceof UnrecoverableError || attemptsMade + 1 >= (attempts ?? 1);
}
