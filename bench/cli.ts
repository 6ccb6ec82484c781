/**
 * The batch-scorer command line as the bench runs it: `[env VAR=value] node <flags> dist/cli.js ...`, as its shebang does.
 */
import { readFileSync } from 'node:fs';

export const CLI = 'dist/cli.js';

/**
 * dist/cli.js's shebang: the environment it sets (MALLOC_ARENA_MAX) and its node flags (e.g.
 * --max-semi-space-size=8). `node dist/cli.js` would skip them, and they change CPU and peak RSS:
 * the bench runs the command as a user does, through `env` as the shebang does.
 */
const SHEBANG = (/^#!\/usr\/bin\/env -S (.*)$/.exec(readFileSync(CLI, 'utf8').split('\n', 1)[0])?.[1] ?? 'node').trim().split(/\s+/);
const NODE_AT = SHEBANG.indexOf('node');
const SHEBANG_ENV = SHEBANG.slice(0, NODE_AT);
const SHEBANG_FLAGS = SHEBANG.slice(NODE_AT + 1);

/** argv of a batch-scorer command. */
export function cliCommand(...args: string[]): string[] {
  return nodeCommand(CLI, ...args);
}

/** argv of a node script run with the environment and flags of dist/cli.js's shebang, as the command runs. */
export function nodeCommand(script: string, ...args: string[]): string[] {
  return [...(SHEBANG_ENV.length > 0 ? ['/usr/bin/env', ...SHEBANG_ENV] : []), process.execPath, ...SHEBANG_FLAGS, script, ...args];
}

export const MODEL = 'mindsdb/home_rentals_model';
