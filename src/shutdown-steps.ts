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
