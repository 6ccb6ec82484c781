import { afterEach, describe, expect, it } from 'vitest';
import { QueueRedis } from '../../src/queue/queue-redis.js';
import { RedisWatch, WAITING_LOG_EVERY_MS } from '../../src/queue/redis-watch.js';
import { keptLogger } from '../helpers/kept-logger.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });

describe('RedisWatch', () => {
  // Never connected (lazyConnect): the events a real connection would send are sent to it by the test.
  const redis = new QueueRedis('redis://user:s3cret@127.0.0.1:1', { lazyConnect: true });
  afterEach(() => redis.removeAllListeners());

  it('says once that it waits, again at most once a minute, and once when Redis is back', async () => {
    let now = 0;
    const { log, messages, lines } = keptLogger();
    const watch = new RedisWatch(redis, log, () => now);
    for (; now < WAITING_LOG_EVERY_MS; now += 500) {
      redis.emit('error', refused());
      watch.error(refused()); // the BullMQ workers say the same
    }
    now = WAITING_LOG_EVERY_MS;
    redis.emit('error', refused());
    redis.emit('error', refused());
    now += 30_000;
    redis.emit('ready');
    redis.emit('ready');
    await new Promise((resolve) => setImmediate(resolve));
    expect(messages()).toEqual(['waiting for Redis', 'still waiting for Redis', 'connected to Redis']);
    expect(lines[0]).toMatchObject({ redis: 'redis://user:***@127.0.0.1:1', err: { message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' } });
    expect(lines[1]).toMatchObject({ waitingSeconds: 60 });
    expect(lines[2]).toMatchObject({ redis: 'redis://user:***@127.0.0.1:1', waitedSeconds: 90 });
    expect(JSON.stringify(lines)).not.toContain('s3cret');
    expect(watch.waiting).toBe(false);
  });

  it('says nothing once stopped: a shutdown drops the connections on purpose', async () => {
    const { log, messages } = keptLogger();
    const watch = new RedisWatch(redis, log);
    watch.stop();
    redis.emit('error', refused());
    watch.error(new Error('Connection is closed.'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(messages()).toEqual([]);
  });
});
