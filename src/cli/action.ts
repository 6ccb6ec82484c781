import type { Command, CommanderError } from 'commander';
import { envLogLevel } from '../process-defaults.js';
import { BatchScorerError, errorCode, errorMessage, UsageError } from '../errors.js';

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

/** The run an error stopped, once it has a folder of its own: the error line names it, and a second line says where it is and how to go on. */
export interface FailedRun {
  runId: string;
  /** The run folder, as a location users can open. */
  folder: string;
  /** The command that resumes the run, ready to copy; absent where resuming cannot help (see resumeCanHelp). */
  resume?: string;
}

/**
 * Every error's one format: `batch-scorer: <what is wrong and what to do> [E_CODE]`, with
 * `run <id> failed:` before the message and a line naming the folder (and the resume command,
 * where resuming can help) when a run had made its folder.
 */
export function reportError(err: unknown, run?: FailedRun): void {
  const code = ` [${errorCode(err)}]`;
  // A message that names its run already (`run <id> expired: ...`) is not named again.
  const which = run && !errorMessage(err).startsWith(`run ${run.runId} `) ? `run ${run.runId} failed: ` : '';
  process.stderr.write(`batch-scorer: ${which}${errorMessage(err)}${code}\n`);
  if (run) process.stderr.write(`run folder: ${run.folder}${run.resume === undefined ? '' : `; resume: ${run.resume}`}\n`);
  if (!(err instanceof BatchScorerError) && envLogLevel() === 'debug') process.stderr.write(`${(err as Error).stack}\n`);
  process.exitCode = err instanceof BatchScorerError ? err.exitCode : 1;
}

/**
 * Sends commander's own errors (unknown option, missing argument, bad value) through
 * reportError as E_USAGE, exit 2, with a pointer to the command's help instead of a dump of it.
 * Applies to the command and every subcommand it has by now.
 */
export function reportUsageErrors(command: Command): void {
  command
    .configureOutput({
      // reportError writes the message; help itself still goes out as commander writes it.
      outputError: () => undefined,
    })
    .exitOverride((err: CommanderError) => {
      // Help and version exit 0; help shown for a missing command is not an error message of its own.
      if (err.exitCode === 0 || err.code === 'commander.help') process.exit(err.exitCode === 0 ? 0 : 2);
      // One line: commander puts its "(Did you mean ...?)" on a line of its own.
      const message = err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
      reportError(new UsageError(`${message} (see ${commandPath(command)} --help)`));
      process.exit();
    });
  for (const sub of command.commands) reportUsageErrors(sub);
}

/** A command as users type it, e.g. `batch-scorer schedule sync`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let at: Command | null = command; at; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}
