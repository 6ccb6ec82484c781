import { limitError, type Limits } from '../config/index.js';
import type { BatchScorerError } from '../errors.js';

/** The work one request may make a server do: seconds, and input bytes read (inflated bytes counted). */
export interface WorkBounds {
  seconds: number;
  bytes: number;
}

/** The bounds of a dry run submitted to `serve`: MAX_DRY_RUN_SECONDS and MAX_DRY_RUN_BYTES. */
export function dryRunBounds(limits: Limits): WorkBounds {
  return { seconds: limits.dryRunSeconds, bytes: limits.dryRunBytes };
}

/**
 * Runs `work` within `bounds`: past its seconds, or once `onBytes` has heard more than its bytes,
 * the signal given to `work` aborts (as it does with `outer`), and once `work` has stopped the
 * call fails with E_LIMIT naming the setting passed (`what` says whose work it was). Waits for
 * `work` to end, so that nothing of it goes on after the answer.
 */
export async function withinBounds<T>(
  bounds: WorkBounds,
  what: string,
  outer: AbortSignal | undefined,
  work: (signal: AbortSignal, onBytes: (bytes: number) => void) => Promise<T>,
): Promise<T> {
  const stop = new AbortController();
  let passed: BatchScorerError | undefined;
  const pass = (err: BatchScorerError) => {
    passed ??= err;
    stop.abort(passed);
    return passed;
  };
  const timer = setTimeout(() => pass(limitError('dryRunSeconds', bounds.seconds, what)), bounds.seconds * 1000);
  let read = 0;
  const onBytes = (bytes: number) => {
    read += bytes;
    if (read > bounds.bytes) throw pass(limitError('dryRunBytes', bounds.bytes, what));
  };
  try {
    return await work(outer ? AbortSignal.any([outer, stop.signal]) : stop.signal, onBytes);
  } catch (err) {
    throw passed ?? err;
  } finally {
    clearTimeout(timer);
  }
}
