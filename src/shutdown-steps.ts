import type { Logger } from './log.js';

/** One cleanup of a graceful shutdown: its name, for the log, and what it does. */
export type ShutdownStep = readonly [name: string, step: () => Promise<unknown>];

/**
 * Runs a shutdown's cleanups in the order given (the reverse of opening), each even when one
 * before it failed: a failure is logged with its step's name, and the rest still release what
 * they hold.
 */
export async function runShutdownSteps(steps: readonly ShutdownStep[], log: Logger): Promise<void> {
  for (const [name, step] of steps) {
    try {
      await step();
    } catch (err) {
      log.error({ err, step: name }, 'shutdown step failed');
    }
  }
}

/**
 * The cleanups of what a process opened, registered as each thing opens: `release()` runs them
 * in reverse order (what was opened last, and may use what came before, goes first), each even
 * when one before it failed, and only once however often it is called.
 */
export class Releasers {
  private readonly steps: ShutdownStep[] = [];
  private released?: Promise<void>;

  constructor(private readonly log: Logger) {}

  /** Registers the cleanup of something just opened. */
  add(name: string, release: () => Promise<unknown>): void {
    this.steps.push([name, release]);
  }

  release(): Promise<void> {
    return (this.released ??= runShutdownSteps(this.steps.toReversed(), this.log));
  }
}
