/**
 * The model service the bench scores against: `batch-scorer simulate` in its own process, so its
 * CPU is never counted as the scorer's, and its work does not slow the bench's event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cliCommand } from './cli.js';

export interface Simulator {
  url: string;
  stop(): Promise<void>;
}

/** Starts a simulator with these flags (e.g. --latency-ms 100) on a free port; answers once it listens. */
export async function startSimulator(flags: string[] = []): Promise<Simulator> {
  const [node, ...args] = cliCommand('simulate', '--port', '0', ...flags);
  const child: ChildProcess = spawn(node, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_LEVEL: 'warn' } });
  let text = '';
  for await (const chunk of child.stdout!) {
    text += String(chunk);
    const m = /listening on (\S+)/.exec(text);
    if (m) {
      // Later output is read and dropped, so a full pipe never blocks the simulator.
      child.stdout!.resume();
      return {
        url: m[1],
        stop: async () => {
          if (child.exitCode !== null) return;
          child.kill('SIGTERM');
          await once(child, 'exit');
        },
      };
    }
  }
  throw new Error(`simulator ${flags.join(' ')} did not start`);
}
