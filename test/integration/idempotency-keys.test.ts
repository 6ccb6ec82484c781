// IdempotencyKeys on a real Redis: what a request meets when the first with its key fails, or has not answered yet.
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import { IdempotencyKeys, type EnqueueAnswer, type IdempotencyKeysOptions } from '../../src/queue/idempotency-keys.js';
import type { RedisClient } from '../../src/queue/queue-connection.js';
import { dropPrefix, REDIS_URL, uniquePrefix } from '../helpers/queue.js';
import { startRedisCluster } from '../helpers/redis-cluster.js';
import { rejection } from '../helpers/rejection.js';
import { tempDir } from '../helpers/scoring.js';
import { REDIS_CLI, REDIS_SERVER } from '../helpers/tools.js';

let redis: RedisClient | undefined;
let prefix = '';
afterEach(async () => {
  redis?.disconnect();
  if (prefix) await dropPrefix(prefix);
});

function keys(waitMs?: number, options: IdempotencyKeysOptions = {}, client: RedisClient = new Redis(REDIS_URL)): IdempotencyKeys {
  prefix = uniquePrefix();
  redis = client;
  return new IdempotencyKeys(redis, prefix, { waitMs, ...options });
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

  it('keeps MAX_IDEMPOTENCY_KEYS keys at most: the newest still replay, the oldest are forgotten first', async () => {
    const store = keys(undefined, { maxIdempotencyKeys: 3 });
    const stored = () => redis!.keys(`${prefix}:idempotency:*`);
    let calls = 0;
    const enqueue = () => Promise.resolve({ runId: `r${++calls}`, created: true });
    for (let i = 1; i <= 10; i++) {
      expect(await store.once({ ...request, key: `k${i}` }, enqueue)).toEqual({ runId: `r${i}`, created: true });
      expect((await stored()).length).toBe(Math.min(i, 3));
      expect(await redis!.zcard(store.indexKey)).toBe(Math.min(i, 3));
    }
    expect((await stored()).sort()).toEqual(['k8', 'k9', 'k10'].map((k) => store.redisKey(k)).sort());
    // The newest replay without enqueueing; the oldest were forgotten: asked again, it enqueues again (and k8 goes in its turn).
    for (const [i, key] of ['k8', 'k9', 'k10'].entries())
      expect(await store.once({ ...request, key }, enqueue)).toEqual({ runId: `r${8 + i}`, created: true, replayed: true });
    expect(calls).toBe(10);
    expect(await store.once({ ...request, key: 'k1' }, enqueue)).toEqual({ runId: 'r11', created: true });
    expect((await stored()).sort()).toEqual(['k9', 'k10', 'k1'].map((k) => store.redisKey(k)).sort());

    // Many at once: never more than the bound, each answered once.
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => store.once({ ...request, key: `burst-${i}` }, enqueue)));
    expect(new Set(answers.map((a) => a.runId)).size).toBe(40);
    expect((await stored()).length).toBe(3);
    expect(await redis!.zcard(store.indexKey)).toBe(3);
  });

  it('costs about what a key did before its index: Redis memory per key measured', async () => {
    const store = keys(undefined, { maxIdempotencyKeys: 100_000 });
    const n = 2_000;
    for (let i = 0; i < n; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          store.once({ key: `550e8400-e29b-41d4-a716-${String(i + j).padStart(12, '0')}`, bodyHash: 'a'.repeat(64) }, () =>
            Promise.resolve({ runId: `20260101T000000Z-${String(i + j).padStart(6, '0')}`, created: true }),
          ),
        ),
      );
    }
    const client = redis as Redis;
    const usage = async (key: string) => Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    const oneKey = await usage(store.redisKey('550e8400-e29b-41d4-a716-000000000000'));
    const indexPerKey = (await usage(store.indexKey)) / n;
    console.log(`Idempotency-Key memory: the key ${oneKey} bytes, its index entry ${indexPerKey.toFixed(0)} bytes (${n} keys)`);
    // The key itself is unchanged (its name and record); the index adds its entry, a hash and a score.
    expect(indexPerKey).toBeLessThan(200);
  });
});

describe.skipIf(!REDIS_SERVER || !REDIS_CLI)('IdempotencyKeys on a Redis Cluster', () => {
  it('bounds the keys by count there too: every key and the index on the slot of the prefix hash tag', async () => {
    const tmp = await tempDir();
    const cluster = await startRedisCluster(tmp.dir);
    try {
      const client = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
      const store = keys(undefined, { maxIdempotencyKeys: 2 }, client);
      let calls = 0;
      const enqueue = () => Promise.resolve({ runId: `r${++calls}`, created: true });
      for (const key of ['a', 'b', 'c', 'd']) await store.once({ ...request, key }, enqueue);
      expect(await store.once({ ...request, key: 'd' }, enqueue)).toEqual({ runId: 'r4', created: true, replayed: true });
      expect(await store.once({ ...request, key: 'a' }, enqueue)).toEqual({ runId: 'r5', created: true });
      expect(await client.zcard(store.indexKey)).toBe(2);
      expect(await client.exists(store.redisKey('b'), store.redisKey('c'))).toBe(0);
      await client.quit();
      redis = undefined;
    } finally {
      await cluster.stop();
      await tmp.cleanup();
      prefix = '';
    }
  });
});
