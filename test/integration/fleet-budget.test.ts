import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setImmediate } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { FleetBudgets } from '../../src/queue/fleet-budget.js';
import { ADAPT } from '../../src/queue/fleet-budget-scripts.js';
import { AdaptiveSlots, AUTO_SLOTS, PROBE_AFTER_MS, type RequestOutcome } from '../../src/service/request-slots.js';
import { dropPrefix, REDIS_URL, uniquePrefix, waitFor } from '../helpers/queue.js';

/** A request held until the test lets it go, counting how many are in flight across every process. */
function gate() {
  let inFlight = 0;
  let peak = 0;
  const open: (() => void)[] = [];
  return {
    request: () =>
      new Promise<void>((resolve) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        open.push(() => {
          inFlight--;
          resolve();
        });
      }),
    /** A request that ends on the loop's next turn. */
    passing: async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await setImmediate();
      inFlight--;
    },
    /** Lets the oldest request in flight end. */
    end: () => open.shift()?.(),
    get inFlight() {
      return inFlight;
    },
    get peak() {
      return peak;
    },
  };
}

describe('fleet budgets (real Redis)', () => {
  let prefix = '';
  const opened: { close(): Promise<void> }[] = [];
  const processes = (n: number, leaseMs?: number) => {
    prefix ||= uniquePrefix();
    return Array.from({ length: n }, () => {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
      const budgets = new FleetBudgets(redis, prefix, silentLogger, leaseMs);
      opened.push({ close: () => budgets.close().then(() => void redis.disconnect()) });
      return budgets;
    });
  };
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close();
    if (prefix) await dropPrefix(prefix);
    prefix = '';
  });

  it('holds a run to its --concurrency across processes, and serves every waiting request', async () => {
    const limits = processes(4).map((b) => b.budget('run-a.1', 3));
    const g = gate();
    const done = Promise.all(limits.flatMap((l) => Array.from({ length: 10 }, () => l.run(g.request))));
    for (let ended = 0; ended < 40; ended++) {
      await waitFor('a request in flight', () => g.inFlight > 0, 10_000, 5);
      expect(g.inFlight).toBeLessThanOrEqual(3);
      g.end();
    }
    await done;
    expect(g.peak).toBe(3);
  });

  it('serves every one of many more requests than slots, ending as soon as they start', async () => {
    // A grant, read on its own connection, may come before the answer that queued its request:
    // none may be lost (a request left waiting for ever would time this test out).
    const [limit] = processes(1).map((b) => b.budget('run-r.1', 8));
    const g = gate();
    let left = 20_000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await limit.run(g.passing);
      }),
    );
    expect(g.peak).toBe(8);
  });

  it('a request that stops waiting fails as aborted, and the slot it would have had goes on', async () => {
    const [a, b] = processes(2).map((p) => p.budget('run-b.1', 1));
    const g = gate();
    const first = a.run(g.request);
    await waitFor('the first request in flight', () => g.inFlight === 1, 10_000, 5);
    const stop = new AbortController();
    const stopped = b.run(g.request, stop.signal);
    const third = a.run(g.request);
    // Both are queued in Redis behind the first.
    const redis = new Redis(REDIS_URL);
    opened.push({ close: () => Promise.resolve(redis.disconnect()) });
    await waitFor('two queued', async () => (await redis.llen(`${prefix}:budget:run-b.1:queue`)) === 2, 10_000, 5);
    stop.abort();
    await expect(stopped).rejects.toBeInstanceOf(AbortedError);
    g.end();
    await first;
    await waitFor('the third request in flight', () => g.inFlight === 1, 10_000, 5);
    g.end();
    await third;
    expect(g.peak).toBe(1);
  });

  it('an idle lease that ran out is forgotten, and leaving with nothing held lets the lease go', async () => {
    const [a, b] = processes(2, 300);
    const redis = new Redis(REDIS_URL);
    opened.push({ close: () => Promise.resolve(redis.disconnect()) });
    const leases = `${prefix}:budget:run-i.1:leases`;
    const g = gate();
    await a.budget('run-i.1', 2).run(g.passing);
    const [, until] = await redis.zrange(leases, 0, 0, 'WITHSCORES');
    await waitFor('the idle lease to run out', async () => Number((await redis.time())[0]) * 1000 > Number(until) + 100, 5_000);
    // Taking a slot first forgets the holder of 0 slots whose lease ran out.
    await b.budget('run-i.1', 2).run(g.passing);
    await b.close();
    expect(await redis.zcard(leases)).toBe(0);
  });

  it("a crashed process's slots come back once its lease runs out", async () => {
    prefix = uniquePrefix();
    const module = fileURLToPath(new URL('../../dist/queue/fleet-budget.js', import.meta.url));
    const logModule = fileURLToPath(new URL('../../dist/log.js', import.meta.url));
    // A process that takes both slots, says so, and hangs on to them until it is killed.
    const script = `
      import { Redis } from 'ioredis';
      import { FleetBudgets } from ${JSON.stringify(module)};
      import { silentLogger } from ${JSON.stringify(logModule)};
      const limit = new FleetBudgets(new Redis(${JSON.stringify(REDIS_URL)}), ${JSON.stringify(prefix)}, silentLogger, 600).budget('run-c.1', 2);
      let held = 0;
      for (let i = 0; i < 2; i++) limit.run(() => { if (++held === 2) console.log('holding'); return new Promise(() => {}); });
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() });
    await once(child.stdout, 'data');
    const [survivor] = processes(1, 600).map((b) => b.budget('run-c.1', 2));
    child.kill('SIGKILL');
    await once(child, 'close');
    const g = gate();
    const both = Promise.all([survivor.run(g.request), survivor.run(g.request)]);
    await waitFor('both slots back', () => g.inFlight === 2, 10_000, 20);
    g.end();
    g.end();
    await both;
  });

  it('auto: the Lua rules move the level as AdaptiveSlots does, attempt by attempt', async () => {
    prefix = uniquePrefix();
    const redis = new Redis(REDIS_URL);
    opened.push({ close: () => Promise.resolve(redis.disconnect()) });
    const attempt = fc.record({
      outcome: fc.constantFrom<RequestOutcome>('answered', 'answered', 'answered', 'overloaded', 'failed'),
      ms: fc.option(fc.double({ min: 1, max: 2_000, noNaN: true }), { nil: undefined }),
      gap: fc.integer({ min: 0, max: 40_000 }),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(attempt, { maxLength: 60 }), fc.integer({ min: 1, max: 6 }), async (attempts, batch) => {
        let now = 1_000_000;
        const limit = new AdaptiveSlots(AUTO_SLOTS, () => now);
        const state = `${prefix}:budget:prop-${run++}`;
        const keys = [state, `${state}:held`, `${state}:leases`, `${state}:queue`];
        const initial = Math.min(AUTO_SLOTS.initial, AUTO_SLOTS.max);
        for (let i = 0; i < attempts.length; i += batch) {
          const args: (string | number)[] = [];
          for (const a of attempts.slice(i, i + batch)) {
            now += a.gap;
            limit.observe(a.outcome, a.ms);
            if (a.outcome !== 'failed') args.push(a.outcome, a.ms ?? '', now);
          }
          const level = await redis.eval(ADAPT, 4, ...keys, `${prefix}:g:`, 1000, 'h/0', initial, AUTO_SLOTS.min, AUTO_SLOTS.max, PROBE_AFTER_MS, ...args);
          expect(level).toBe(limit.concurrency);
        }
      }),
      { numRuns: 200 },
    );
  });
});
