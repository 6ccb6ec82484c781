/**
 * The batch-scorer command line as the bench runs it: `node <flags> dist/cli.js ...`.
 */
import { readFileSync } from 'node:fs';

export const CLI = 'dist/cli.js';

/**
 * The node flags of dist/cli.js's shebang (e.g. --max-semi-space-size=4). `node dist/cli.js`
 * would skip them, and they change peak RSS: the bench measures the command as a user runs it.
 */
const SHEBANG_FLAGS = (/^#!.*\bnode\b(.*)$/m.exec(readFileSync(CLI, 'utf8').split('\n', 1)[0])?.[1] ?? '').trim().split(/\s+/).filter(Boolean);

/** argv of a batch-scorer command. */
export function cliCommand(...args: string[]): string[] {
  return [process.execPath, ...SHEBANG_FLAGS, CLI, ...args];
}

export const MODEL = 'mindsdb/home_rentals_model';
