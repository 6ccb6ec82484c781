import { AbortedError, BatchScorerError, errorMessage } from '../errors.js';

/**
 * Runs a command's action: an error becomes one line on stderr that says what to fix, and the
 * exit code its class carries (2: usage or configuration, 1: the run failed).
 */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      reportError(err);
    }
  };
}

export function reportError(err: unknown): void {
  const code = err instanceof BatchScorerError ? ` [${err.code}]` : '';
  process.stderr.write(`batch-scorer: ${errorMessage(err)}${code}\n`);
  if (!(err instanceof BatchScorerError) && process.env.LOG_LEVEL === 'debug') process.stderr.write(`${(err as Error).stack}\n`);
  process.exitCode = err instanceof BatchScorerError ? err.exitCode : 1;
}

/**
 * Aborts on SIGINT/SIGTERM so work stops cleanly; a second signal exits at once. Answers the
 * signal and a function that removes the handlers.
 */
export function interruptSignal(onFirst?: (signal: string) => void): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const handler = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(130);
    onFirst?.(name);
    controller.abort(new AbortedError(`stopped by ${name}`));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
