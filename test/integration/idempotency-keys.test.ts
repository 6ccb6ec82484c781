// IdempotencyKeys on a real Redis: what a request meets when the first with its key fails, or has not answered yet.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import { IdempotencyKeys, type EnqueueAnswer } from '../../src/queue/idempotency-keys.js';
import { dropPrefix, REDIS_URL, uniquePrefix } from '../helpers/queue.js';
import { rejection } from '../helpers/rejection.js';

let redis: Redis | undefined;
let prefix = '';
afterEach(async () => {
  redis?.disconnect();
  if (prefix) await dropPrefix(prefix);
});

function keys(waitMs?: number): IdempotencyKeys {
  prefix = uniquePrefix();
  redis = new Redis(REDIS_URL);
  return new IdempotencyKeys(redis, prefix, waitMs);
}

const request = { key: 'order-17', bodyHash: 'a'.repeat(64) };
const answer: EnqueueAnswer = { runId: 'r1', created: true };

describe('IdempotencyKeys', () => {
  it('keeps no failed answer: the key is free for the next request at once', async () => {
    const store = keys();
    const refusal = new BatchScorerError('E_RUN_EXISTS', 'taken');
    await expect(store.once(request, () => Promise.reject(refusal))).rejects.toBe(refusal);
    expect(await redis!.exists(store.redisKey(request.key))).toBe(0);
    let calls = 0;
    const enqueue = () => Promise.resolve({ ...answer, runId: `r${++calls}` });
    expect(await store.once(request, enqueue)).toEqual({ runId: 'r1', created: true });
    expect(await store.once(request, enqueue)).toEqual({ runId: 'r1', created: true, replayed: true });
    expect(calls).toBe(1);
  });

  it('answers E_IDEMPOTENCY_IN_PROGRESS when the first request does not answer in time, and its answer once it has', async () => {
    const store = keys(300);
    let finish!: (a: EnqueueAnswer) => void;
    const first = store.once(request, () => new Promise<EnqueueAnswer>((resolve) => (finish = resolve)));
    await expect(store.once(request, () => Promise.reject(new Error('must not be called')))).rejects.toMatchObject({ code: 'E_IDEMPOTENCY_IN_PROGRESS' });
    // Another body is refused at once, even while the first is pending.
    const other = await rejection(
      store.once({ ...request, bodyHash: 'b'.repeat(64) }, () => Promise.resolve(answer)),
      BatchScorerError,
    );
    expect(other.code).toBe('E_IDEMPOTENCY_KEY_REUSED');
    finish(answer);
    expect(await first).toEqual(answer);
    expect(await store.once(request, () => Promise.reject(new Error('must not be called')))).toEqual({ ...answer, replayed: true });
  });
});
