import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { CANCEL_POLL_MS, CancelWatch } from '../../src/queue/cancel-watch.js';
import { RunCancels } from '../../src/queue/run-cancel.js';
import { dropPrefix, REDIS_URL, uniquePrefix } from '../helpers/queue.js';

// The worker side of a cancel, on a real Redis: the jobs of a cancelled run, and only those, are
// aborted within a poll; a run enqueued again after a cancel gets a signal of its own.

const prefix = uniquePrefix();
let redis: Redis;
let cancels: RunCancels;

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  cancels = new RunCancels(redis, prefix);
});
afterAll(async () => {
  redis.disconnect();
  await dropPrefix(prefix);
});

describe('CancelWatch', () => {
  it("aborts the signal of every job of a cancelled run within a poll, with E_CANCELLED, and no other run's", async () => {
    const watch = new CancelWatch(cancels, silentLogger);
    const [a1, a2, b] = [watch.follow('a'), watch.follow('a'), watch.follow('b')];
    const asked = Date.now();
    await cancels.mark('a');
    await once(a1.signal, 'abort');
    expect(Date.now() - asked).toBeLessThan(CANCEL_POLL_MS * 3);
    expect(a2.signal.aborted).toBe(true);
    expect(a1.signal.reason).toMatchObject({ code: 'E_CANCELLED', message: expect.stringContaining('run a was cancelled') as unknown });
    expect(b.signal.aborted).toBe(false);
    expect(await cancels.which(['a', 'b'])).toEqual(['a']);

    // Enqueued again (the marker cleared) while one of its old jobs still stops: the new job is not born aborted.
    a1.release();
    await cancels.clear('a');
    const again = watch.follow('a');
    expect(again.signal.aborted).toBe(false);
    for (const f of [a2, b, again]) f.release();
    watch.stop();
  });
});
