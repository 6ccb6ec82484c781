// runUntilSignal, the life of every long-running command, in a process of its own: what its
// shutdown does on a signal, on a second one, past its grace, and on an error nothing caught.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/queue.js';

const module = fileURLToPath(new URL('../../dist/cli/graceful-exit.js', import.meta.url));
const log = fileURLToPath(new URL('../../dist/log.js', import.meta.url));

/**
 * A process whose shutdown prints 'released' after `shutdownMs` (never, when null), with
 * `graceMs` of grace; `then` runs once it is ready (after it printed 'ready').
 */
function start(shutdownMs: number | null, graceMs: number, then = '') {
  const shutdown = shutdownMs === null ? 'new Promise(() => {})' : `new Promise((r) => setTimeout(r, ${shutdownMs})).then(() => console.log('released'))`;
  const script = `
    const [{ runUntilSignal }, { createLogger }] = await Promise.all([import(${JSON.stringify(module)}), import(${JSON.stringify(log)})]);
    runUntilSignal(createLogger(), ${graceMs}, () => ${shutdown});
    setInterval(() => undefined, 1000);
    console.log('ready');
    ${then}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const exited = once(child, 'close').then(([code]) => code as number | null);
  return { child, exited, stdout: () => stdout, stderr: () => stderr, ready: () => waitFor('the process to be ready', () => stdout.includes('ready'), 10_000) };
}

describe('runUntilSignal', () => {
  it('on SIGTERM runs the shutdown, logs the signal and exits 0', async () => {
    const p = start(200, 5_000);
    await p.ready();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.stdout()).toContain('released');
    expect(p.stderr()).toMatch(/"signal":"SIGTERM".*"msg":"signal received; a second one exits at once"/);
  });

  it('a second signal exits at once with 130', async () => {
    const p = start(null, 60_000);
    await p.ready();
    p.child.kill('SIGTERM');
    await waitFor('the first signal to be taken', () => p.stderr().includes('signal received'), 10_000);
    const second = Date.now();
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(130);
    expect(Date.now() - second).toBeLessThan(5_000);
  });

  it('a shutdown that does not end is cut short past its grace, with a line saying so', async () => {
    const p = start(null, 1_000);
    await p.ready();
    const signalled = Date.now();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(143);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(900);
    expect(p.stderr()).toContain('batch-scorer: still stopping 1000 ms after SIGTERM (see --shutdown-timeout); exiting now');
  });

  it('an error nothing caught is logged, shuts down the same way and exits 1', async () => {
    const p = start(100, 5_000, "setTimeout(() => { throw new Error('boom'); }, 50);");
    expect(await p.exited).toBe(1);
    expect(p.stdout()).toContain('released');
    expect(p.stderr()).toMatch(/"msg":"uncaught error: shutting down"/);
    expect(p.stderr()).toContain('boom');
  });
});
