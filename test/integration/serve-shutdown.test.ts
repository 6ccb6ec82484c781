import { afterEach, describe, expect, it } from 'vitest';
import { Gauge, Registry } from 'prom-client';
import { startServe, type Serving } from '../../src/app/serve-app.js';
import { silentLogger } from '../../src/log.js';
import { createStorage } from '../../src/storage/storage.js';
import { dropPrefix, REDIS_URL, uniquePrefix, waitFor } from '../helpers/queue.js';

/** A registry whose collection waits until released: a request to /metrics stays in flight until then. */
function slowMetrics() {
  const registry = new Registry();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inFlight = new Promise<void>((resolve) => (entered = resolve));
  new Gauge({
    name: 'slow_gauge',
    help: 'set once released',
    registers: [registry],
    async collect() {
      entered();
      await gate;
      this.set(1);
    },
  });
  return { registry, release, inFlight };
}

const prefix = uniquePrefix();
let serving: Serving | undefined;
afterEach(async () => {
  await serving?.close();
  await dropPrefix(prefix);
});

async function start(metrics: Registry, shutdownTimeoutMs: number): Promise<Serving> {
  serving = await startServe({
    host: '127.0.0.1',
    port: 0,
    shutdownTimeoutMs,
    queue: { redisUrl: REDIS_URL, prefix },
    credentials: {},
    storage: createStorage(),
    log: silentLogger,
    metrics,
    dryRun: () => Promise.reject(new Error('no dry runs in this test')),
    policy: {},
  });
  return serving;
}

describe('serve shutdown', () => {
  it('stops taking connections, lets a request in flight finish, then closes; close() is safe twice', async () => {
    const slow = slowMetrics();
    const s = await start(slow.registry, 10_000);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
    const answer = fetch(`${s.url}/metrics`);
    await slow.inFlight;
    let closed = false;
    const closing = s.close().then(() => (closed = true));
    await waitFor(
      'new connections to be refused',
      () =>
        fetch(`${s.url}/healthz`).then(
          () => false,
          () => true,
        ),
      5_000,
    );
    expect(closed).toBe(false);
    slow.release();
    const released = Date.now();
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('slow_gauge 1');
    await closing;
    // Not held until the 10 s timeout by the answered request's keep-alive connection.
    expect(Date.now() - released).toBeLessThan(2_000);
    await s.close();
  });

  it('cuts a request still in flight at the shutdown timeout', async () => {
    const slow = slowMetrics();
    const s = await start(slow.registry, 300);
    const answer = fetch(`${s.url}/metrics`).then(
      (r) => r.status,
      () => 'cut',
    );
    await slow.inFlight;
    const started = Date.now();
    await s.close();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await answer).toBe('cut');
    slow.release();
  });
});
