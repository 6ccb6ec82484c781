import { constants } from 'node:os';
import closeWithGrace from 'close-with-grace';
import { AbortedError } from '../errors.js';
import type { Logger } from '../log.js';

/** What started a shutdown: a signal (SIGTERM, SIGINT, SIGHUP...), or an error nothing caught. */
export interface ShutdownCause {
  signal?: NodeJS.Signals;
  err?: Error;
}

/** The exit code shells expect of a program a signal stopped: 128 + its number (130 for SIGINT, 143 for SIGTERM). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/** How a process ends once a shutdown has begun, beside the exit code its shutdown answers. */
interface GracefulExitOptions {
  /** How long the shutdown may take before the process exits anyway, naming the signal on stderr. */
  graceMs: number;
  /** The exit code of a second signal, which exits at once; the first signal's own code when absent. */
  secondSignalExit?: number;
}

/**
 * The one way a batch-scorer process hears that it must stop: close-with-grace hands the first
 * SIGINT, SIGTERM (or another terminating signal) or error nothing caught to `shutdown`, and
 * exits with the code it answers. A second signal exits at once, and so does a process still
 * stopping `graceMs` after the first: a step that does not end (a filesystem call that hangs)
 * never keeps it alive. `uninstall()` removes the handlers of a command whose work ended by itself.
 */
export function exitGracefully(options: GracefulExitOptions, shutdown: (cause: ShutdownCause) => Promise<number>): { uninstall: () => void } {
  let cause: ShutdownCause = {};
  const exitCode = () => (cause.signal ? signalExitCode(cause.signal) : 1);
  const { uninstall } = closeWithGrace(
    {
      delay: options.graceMs,
      // Its messages go to stderr as our own lines, below; a normal end of the event loop is no shutdown.
      logger: false,
      skip: ['beforeExit'],
      onSecondSignal: () => process.exit(options.secondSignalExit ?? exitCode()),
      onSecondError: () => process.exit(exitCode()),
      onTimeout: (delay) => {
        const what = cause.signal ?? 'an uncaught error';
        process.stderr.write(`batch-scorer: still stopping ${delay} ms after ${what} (see --shutdown-timeout); exiting now\n`);
        process.exit(exitCode());
      },
    },
    async (heard) => {
      cause = { ...(heard.signal && { signal: heard.signal }), ...(heard.err && { err: heard.err }) };
      // An exit with a code of its own: close-with-grace would exit 0 once this resolves.
      process.exit(await shutdown(cause));
    },
  );
  return { uninstall };
}

/**
 * Aborts on SIGINT/SIGTERM (or an error nothing caught) so a command's work stops cleanly, and
 * exits once `dispose()` says it has, with the code shells expect (see signalExitCode); a second
 * signal exits at once, and so does the process still stopping `graceMs` after the first (see
 * exitGracefully). Answers the signal, `dispose`, and the exit code while a signal stopped it.
 */
export function interruptSignal(graceMs: number): {
  signal: AbortSignal;
  dispose: () => void;
  exitCode: () => number | undefined;
} {
  const controller = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  let stopped!: () => void;
  const ended = new Promise<void>((resolve) => (stopped = resolve));
  const exitCode = () => (stoppedBy === undefined ? undefined : signalExitCode(stoppedBy));
  const grace = exitGracefully({ graceMs }, async ({ signal, err }) => {
    stoppedBy = signal;
    controller.abort(err ?? new AbortedError(`stopped by ${signal}`));
    await ended;
    return exitCode() ?? 1;
  });
  return {
    signal: controller.signal,
    dispose: () => {
      grace.uninstall();
      stopped();
    },
    exitCode,
  };
}

/**
 * The life of a long-running command (`worker`, `serve`, `watch`, `simulate`): waits for a
 * signal, runs the graceful `shutdown` (which releases what the command opened), flushes the log
 * and exits 0; a second signal exits at once with 130, and a shutdown still running `graceMs`
 * after the signal is cut short (see exitGracefully). An error nothing caught shuts down the same
 * way, logged, and exits 1. The exit is explicit: with Redis away, BullMQ's close leaves timers
 * behind that would keep the process alive, though every connection is closed or dropped by then.
 */
export function runUntilSignal(log: Logger, graceMs: number, shutdown: () => Promise<void>): Promise<never> {
  exitGracefully({ graceMs, secondSignalExit: 130 }, async ({ signal, err }) => {
    if (err) log.fatal({ err }, 'uncaught error: shutting down');
    else log.info({ signal }, 'signal received; a second one exits at once');
    await shutdown();
    await new Promise<void>((resolve) => log.flush(() => resolve()));
    return err ? 1 : 0;
  });
  return new Promise<never>(() => undefined);
}
