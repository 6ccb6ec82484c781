import { afterEach } from 'vitest';
import { startCli, type CliProcess } from './cli.js';
import { freePort, waitFor } from './queue.js';

/** `serve` as a real child process, listening on a port of its own. */
export interface ServeProcess extends CliProcess {
  url: string;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts `node dist/cli.js serve` on a free port with `env` over the test's environment, and
 * resolves once it answers `/healthz` (failing with its stderr if it exits first).
 */
export async function startServeProcess(env: Record<string, string | undefined>, args: string[] = []): Promise<ServeProcess> {
  const port = await freePort();
  const cli = startCli(['serve', '--port', String(port), ...args], env);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    'serve to answer /healthz',
    async () => {
      if (cli.child.exitCode !== null) throw new Error(`serve exited with ${cli.child.exitCode}: ${cli.stderr()}`);
      return fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
    },
    15_000,
  );
  return {
    ...cli,
    url,
    stop: () => {
      cli.child.kill('SIGTERM');
      return cli.exited;
    },
  };
}

/** Starts `serve` processes for a test and kills those still running after it. */
export function useServeProcesses() {
  const started: ServeProcess[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) {
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      await s.exited;
    }
  });
  return async (env: Record<string, string | undefined>, args: string[] = []) => {
    const s = await startServeProcess(env, args);
    started.push(s);
    return s;
  };
}
