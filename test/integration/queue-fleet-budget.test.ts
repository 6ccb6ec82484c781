import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';

const ROWS = 8_000;
const f = useQueueFixture();
const files = useRentalsInput(ROWS);

const enqueue = (runId: string, options: Record<string, unknown>) =>
  f.queue.enqueue({
    input: files.input,
    model: 'mindsdb/home_rentals_model',
    out: join(files.dir, runId),
    options: { service: f.sim.url, runId, segmentRows: 1_000, batchSize: 100, ...options },
  });

describe("a queued run's --concurrency across its workers", () => {
  it('4 workers of 4 slots each never have more of the run in flight than its --concurrency', async () => {
    // The service refuses (429) beyond 8 at once: 16 worker slots would meet it, 3 never do.
    await f.setup({ latencyMs: 30, capacity: 8 });
    for (let i = 0; i < 4; i++) f.worker(['--max-in-flight', '4', '--segments', '2']);
    const { runId } = await enqueue('fleet3', { concurrency: 3 });
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    expect(f.sim.stats.predictRows).toBeGreaterThanOrEqual(ROWS);
    expect(f.sim.stats.peakInFlight).toBeLessThanOrEqual(3);
    expect(f.sim.stats.overCapacity).toBe(0);
  });

  it('a run that sets none is bounded by its workers alone: no budget in Redis', async () => {
    await f.setup({ latencyMs: 10 });
    for (let i = 0; i < 2; i++) f.worker(['--max-in-flight', '2']);
    const { runId } = await enqueue('unset', {});
    expect((await f.finished(runId)).state).toBe('succeeded');
    expect(f.sim.stats.peakInFlight).toBeLessThanOrEqual(4);
    const redis = new Redis(f.redisUrl);
    try {
      expect(await redis.keys(`${f.prefix}:budget*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('a cancelled run stops its requests waiting for the budget, and every slot it held comes back', async () => {
    await f.setup({ latencyMs: 300 });
    for (let i = 0; i < 2; i++) f.worker(['--max-in-flight', '4']);
    const { runId } = await enqueue('cancelled', { concurrency: 2 });
    await waitFor('requests sent', () => f.sim.stats.predictRequests >= 4, 30_000);
    await f.queue.cancel(runId);
    await waitFor('the run cancelled', async () => (await f.queue.get(runId))?.state === 'cancelled', 15_000);
    const redis = new Redis(f.redisUrl);
    try {
      const budget = (await redis.keys(`${f.prefix}:budget:${runId}.*`)).find((k) => !/:(held|leases|queue)$/.test(k))!;
      // Requests that stopped waiting left entries in the queue: their slots are handed on and given back.
      await waitFor(
        'no slot held nor request queued',
        async () => (await redis.hget(budget, 'used')) === '0' && (await redis.llen(`${budget}:queue`)) === 0,
        10_000,
      );
    } finally {
      redis.disconnect();
    }
  });

  it("a killed worker's slots come back to the run once its lease runs out", async () => {
    await f.setup({ latencyMs: 1_500 });
    const first = f.worker(['--max-in-flight', '2']);
    const { runId } = await enqueue('crash', { concurrency: 2, segmentRows: 4_000, batchSize: 1_000 });
    await waitFor('the first worker to hold both slots', () => f.sim.stats.peakInFlight === 2, 30_000);
    first.child.kill('SIGKILL');
    await first.exited;
    // The budget still counts the dead worker's two slots: the second worker scores only once they come back.
    f.worker(['--max-in-flight', '2']);
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    expect(f.sim.stats.peakInFlight).toBe(2);
  });
});
