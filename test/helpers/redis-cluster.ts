import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { createServer } from 'node:net';
import { waitFor } from './queue.js';
import { REDIS_CLI, REDIS_SERVER } from './tools.js';

const run = promisify(execFile);

/** A Redis Cluster of a test's own: three masters on free local ports, no replicas, nothing kept on disk. */
export interface RedisCluster {
  ports: number[];
  /** REDIS_URL for it, every master a seed: `redis-cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`. */
  url: string;
  /** Runs redis-cli against one node, e.g. `cli(port, 'cluster', 'info')`; answers its output. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** Kills the servers and waits for them to exit. */
  stop(): Promise<void>;
}

/**
 * Starts three `redis-server --cluster-enabled yes` as child processes (their node files in
 * `dir`), joins them with `redis-cli --cluster create`, and waits until every node says
 * `cluster_state:ok`. On failure, what was started is stopped.
 */
export async function startRedisCluster(dir: string, masters = 3): Promise<RedisCluster> {
  if (!REDIS_SERVER || !REDIS_CLI) throw new Error('redis-server and redis-cli must be on PATH');
  const redisCli = REDIS_CLI;
  const servers: ChildProcess[] = [];
  const cli = async (port: number, ...args: string[]) => (await run(redisCli, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 })).stdout;
  const stop = async () => {
    const running = servers.filter((s) => s.exitCode === null && s.signalCode === null);
    for (const s of running) s.kill('SIGKILL');
    await Promise.all(running.map((s) => once(s, 'exit')));
  };
  try {
    const ports: number[] = [];
    for (let i = 0; i < masters; i++) {
      const port = await freeNodePort(ports);
      ports.push(port);
      servers.push(
        spawn(
          REDIS_SERVER,
          [
            ...['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `${dir}/nodes-${port}.conf`],
            ...['--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', dir, '--maxmemory-policy', 'noeviction'],
          ],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const port of ports) {
      await waitFor(
        `redis-server on port ${port} to answer`,
        () =>
          cli(port, 'ping').then(
            (r) => r.trim() === 'PONG',
            () => false,
          ),
        10_000,
      );
    }
    await run(redisCli, ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
    for (const port of ports) {
      await waitFor(
        `node ${port} to say cluster_state:ok`,
        () =>
          cli(port, 'cluster', 'info').then(
            (r) => r.includes('cluster_state:ok'),
            () => false,
          ),
        30_000,
        100,
      );
    }
    return { ports, url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, cli, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Whether nothing listens on a local TCP port (a moment ago). */
async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    return true;
  } catch {
    return false;
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

/**
 * A port for a cluster node: free, with its cluster bus port (10000 above it) free too, so not
 * an ephemeral one (from 32768 up, whose bus port may pass 65535), and not one of `taken`.
 */
async function freeNodePort(taken: number[]): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000);
    if (!taken.includes(port) && (await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a cluster node');
}
