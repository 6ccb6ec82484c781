import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A CLI child process under way: its output so far, and its result once it exits. */
export interface RunningCli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<CliResult>;
}

/** Starts the built CLI as a real child process (npm test builds dist/ first), for tests that act on it while it runs. */
export function startCli(args: string[], env: Record<string, string | undefined> = {}): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  // 'close', not 'exit': by then the output pipes are drained too.
  const exited = once(child, 'close').then(([code]) => ({ code: code as number | null, stdout, stderr }));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs the built CLI as a real child process to its end. */
export async function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return startCli(args, env).exited;
}
