import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { RunProgressStore, SAMPLE_EVERY_MS } from '../../src/queue/run-progress.js';
import { dropPrefix, REDIS_URL, uniquePrefix } from '../helpers/queue.js';

const prefix = uniquePrefix();
const redis = new Redis(REDIS_URL);
afterEach(async () => {
  await dropPrefix(prefix);
});
afterAll(() => redis.quit());

describe("a run's throughput samples in Redis", () => {
  it('are taken at most once per interval, whoever reports, and the last rows always, once', async () => {
    const store = new RunProgressStore(redis, prefix);
    const [a, b] = [store, new RunProgressStore(redis, prefix)];
    await a.start('r', 1000, 2);
    const t0 = Number((await redis.lrange(`${prefix}:progress:r:samples`, 0, -1))[0].split(',')[0]);
    await a.sample('r', { rowsDone: 100, rowsTotal: 1000 }, t0 + 500);
    await b.sample('r', { rowsDone: 300, rowsTotal: 1000 }, t0 + SAMPLE_EVERY_MS);
    await a.sample('r', { rowsDone: 350, rowsTotal: 1000 }, t0 + SAMPLE_EVERY_MS + 10);
    await b.sample('r', { rowsDone: 1000, rowsTotal: 1000 }, t0 + SAMPLE_EVERY_MS + 300);
    await a.sample('r', { rowsDone: 1000, rowsTotal: 1000 }, t0 + SAMPLE_EVERY_MS + 400);
    const { samples, segments, progress } = await store.details('r');
    expect(samples).toEqual([
      { t: t0, rowsDone: 0 },
      { t: t0 + SAMPLE_EVERY_MS, rowsDone: 300 },
      { t: t0 + SAMPLE_EVERY_MS + 300, rowsDone: 1000 },
    ]);
    expect(segments).toEqual([
      { rows: 0, quarantined: 0, done: false },
      { rows: 0, quarantined: 0, done: false },
    ]);
    expect(progress).toMatchObject({ rowsTotal: 1000, segmentsTotal: 2 });
    expect(await redis.ttl(`${prefix}:progress:r:samples`)).toBeGreaterThan(0);
  });

  it('go with the progress when a run is enqueued again', async () => {
    const store = new RunProgressStore(redis, prefix);
    await store.start('r', 10, 1);
    await store.segment('r', 0, 10, 1, true);
    expect(await store.details('r')).toMatchObject({ segments: [{ rows: 10, quarantined: 1, done: true }], samples: [{ rowsDone: 0 }] });
    await store.clear('r');
    expect(await store.details('r')).toEqual({ segments: [], samples: [] });
  });
});

describe("a run's error allowance in Redis", () => {
  it("sums its segments' quarantined rows, a segment's count replacing its last, and stays past its allowance once past", async () => {
    const store = new RunProgressStore(redis, prefix);
    await store.start('b', 1000, 3);
    // A segment a resumed run finished before counts from the start.
    await store.segment('b', 0, 300, 4, true);
    expect(await store.quarantined('b', 1, 6, 10)).toBe(false); // 10: the allowance, not past it
    // Segment 1 tried again starts its count over: it replaces the failed attempt's 6.
    expect(await store.quarantined('b', 1, 2, 10)).toBe(false);
    expect(await store.quarantined('b', 2, 4, 10)).toBe(false); // 4 + 2 + 4
    expect(await store.pastAllowance('b')).toBe(false);
    expect(await store.quarantined('b', 2, 5, 10)).toBe(true);
    expect(await store.pastAllowance('b')).toBe(true);
    // Past once, past for good: the segments that still score stop.
    expect(await store.quarantined('b', 2, 0, 10)).toBe(true);
    expect((await store.read('b'))?.rowsQuarantined).toBe(6);

    // The failed run's counts, as its errors.jsonl holds them.
    await store.keepQuarantined('b', [4, 3, 5]);
    expect((await store.details('b')).segments.map((s) => s.quarantined)).toEqual([4, 3, 5]);
    // Enqueued again (a resume), the run starts with an allowance of its own.
    await store.clear('b');
    await store.start('b', 1000, 3);
    expect(await store.pastAllowance('b')).toBe(false);
    expect(await store.quarantined('b', 1, 10, 10)).toBe(false);
  });
});
