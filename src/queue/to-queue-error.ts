import { UnrecoverableError } from 'bullmq';
import { BatchScorerError, errorMessage } from '../errors.js';

/**
 * An error as BullMQ should treat it: a permanent one (unknown model, bad input, error threshold)
 * becomes UnrecoverableError, so the job fails at once; anything else is retried with backoff.
 * The code stays in the message, where `status` and the manifest show it.
 */
export function toQueueError(err: unknown): Error {
  if (err instanceof BatchScorerError && !err.retriable) return new UnrecoverableError(`${err.message} [${err.code}]`);
  if (err instanceof BatchScorerError) return new Error(`${err.message} [${err.code}]`, { cause: err });
  return err instanceof Error ? err : new Error(errorMessage(err));
}

/** True when this failure is the job's last: BullMQ will not try it again. */
export function isFinalFailure(err: Error, attemptsMade: number, attempts: number | undefined): boolean {
  return err instanceof UnrecoverableError || attemptsMade + 1 >= (attempts ?? 1);
}
