import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { errorCode } from '../../src/errors.js';
import { isConnectionError } from '../../src/queue/queue-connection.js';
import { QueueCluster } from '../../src/queue/queue-cluster.js';
import { QueueRedis } from '../../src/queue/queue-redis.js';
import { redisConnection } from '../../src/queue/queues.js';
import { parseRedisUrl } from '../../src/config/redis-url.js';
import { hashTagOf, redisTarget } from '../../src/queue/redis-target.js';

/** The error a call throws, for its code and message. */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('nothing was thrown');
}

describe('parseRedisUrl', () => {
  it('hands a single node to ioredis as written', () => {
    for (const url of ['redis://127.0.0.1:6379', 'rediss://user:pw@redis.example:6380/2', 'redis://u:pa,ss@h:1', '/run/redis.sock', 'localhost:6379']) {
      expect(parseRedisUrl(url)).toEqual({ kind: 'node', url });
    }
  });

  it('reads a cluster: its seed nodes, credentials decoded, TLS, and the URL shown with the password masked', () => {
    expect(parseRedisUrl('redis-cluster://app:p%40ss%2Fw@10.0.0.1:7000, 10.0.0.2:7001,[::1]:7002,redis-c')).toEqual({
      kind: 'cluster',
      seeds: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
        { host: 'redis-c', port: 6379 },
      ],
      username: 'app',
      password: 'p@ss/w',
      tls: false,
      shownUrl: 'redis-cluster://app:***@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002,redis-c:6379',
    });
    expect(parseRedisUrl('REDISS-CLUSTER://:s3cret@h1:7000/0')).toEqual({
      kind: 'cluster',
      seeds: [{ host: 'h1', port: 7000 }],
      password: 's3cret',
      tls: true,
      shownUrl: 'rediss-cluster://:***@h1:7000',
    });
  });

  it.each([
    ['http://h:1', /the scheme http:\/\/ is not one of redis:\/\/, rediss:\/\/, redis-cluster:\/\/, rediss-cluster:\/\//],
    ['redis+cluster://u:s3cret@h:1', /the scheme redis\+cluster:\/\/ is not one of/],
    ['redis://u:s3cret@h1:1,h2:2', /a redis:\/\/ URL names one node; for a Redis Cluster write redis-cluster:\/\//],
    ['redis-cluster://u:s3cret@', /a cluster URL names some of its nodes/],
    ['redis-cluster://u:s3cret@h1:1,,h2:2', /node 2 of the cluster URL, "", is not host:port/],
    ['redis-cluster://u:s3cret@h1:70000', /node 1 of the cluster URL, "h1:70000", is not host:port with a port from 1 to 65535/],
    ['redis-cluster://u:s3cret@h1:1/3', /takes no database, path or query .*database 0 only/],
    ['redis-cluster://u:s3cret@h1:1?tls=true', /takes no database, path or query/],
    ['redis-cluster://u:s3cret%zz@h1:1', /user name or password .* not valid URL text/],
  ])('refuses %s as E_CONFIG naming REDIS_URL, without the password', (url, message) => {
    const err = thrown(() => parseRedisUrl(url));
    expect(errorCode(err)).toBe('E_CONFIG');
    expect(err.message).toMatch(/^REDIS_URL: /);
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('s3cret');
  });
});

describe('the queue prefix on a cluster', () => {
  it('finds the hash tag as Redis Cluster does', () => {
    expect(hashTagOf('{batch-scorer}')).toBe('batch-scorer');
    expect(hashTagOf('team-a:{scoring}:v2')).toBe('scoring');
    expect(hashTagOf('a}{b}')).toBe('b');
    for (const none of ['batch-scorer', '{}', '{}{x}', '{open']) expect(hashTagOf(none)).toBeUndefined();
  });

  it('refuses a prefix without one for a cluster URL only, naming QUEUE_PREFIX', () => {
    const url = 'redis-cluster://u:s3cret@h1:7000';
    const err = thrown(() => redisTarget({ redisUrl: url, prefix: 'batch-scorer' }));
    expect(errorCode(err)).toBe('E_CONFIG');
    expect(err.message).toMatch(/^QUEUE_PREFIX "batch-scorer" has no hash tag.*redis-cluster:\/\/u:\*\*\*@h1:7000.*QUEUE_PREFIX=\{batch-scorer\}/);
    expect(err.message).not.toContain('s3cret');
    expect(redisTarget({ redisUrl: url, prefix: '{batch-scorer}' }).kind).toBe('cluster');
    expect(redisTarget({ redisUrl: 'redis://h:1', prefix: 'batch-scorer' }).kind).toBe('node');
  });
});

describe('redisConnection', () => {
  it('makes a QueueCluster for a cluster URL, with the options BullMQ asks of workers and producers on its nodes', () => {
    for (const [role, retries] of [
      ['worker', null],
      ['producer', 3],
    ] as const) {
      const c = redisConnection({ redisUrl: 'redis-cluster://app:s3cret@127.0.0.1:1', prefix: '{t}' }, role);
      c.on('error', () => {}); // nothing listens on port 1
      c.disconnectAll();
      expect(c).toBeInstanceOf(QueueCluster);
      expect(c.shownUrl).toBe('redis-cluster://app:***@127.0.0.1:1');
      expect((c as QueueCluster).options.redisOptions).toMatchObject({ maxRetriesPerRequest: retries, username: 'app', password: 's3cret' });
    }
    const node = redisConnection({ redisUrl: 'redis://app:s3cret@127.0.0.1:1', prefix: 'plain' }, 'worker');
    node.on('error', () => {});
    node.disconnectAll();
    expect(node).toBeInstanceOf(QueueRedis);
    expect(node.shownUrl).toBe('redis://app:***@127.0.0.1:1');
  });

  it('takes a cluster that none of whose nodes answers for Redis being away', () => {
    expect(isConnectionError(Object.assign(new Error('Failed to refresh slots cache.'), { name: 'ClusterAllFailedError' }))).toBe(true);
    expect(isConnectionError(new Error('None of startup nodes is available'))).toBe(true);
    expect(isConnectionError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isConnectionError(new Error("CROSSSLOT Keys in request don't hash to the same slot"))).toBe(false);
  });
});

describe("the config file's redis.url", () => {
  it('takes a cluster URL, and refuses one that cannot work naming the file and key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'batch-scorer-config-'));
    try {
      await writeFile(join(dir, 'base.yaml'), 'redis:\n  url: redis-cluster://h1:7000,h2:7000\n  prefix: "{bs}"\n');
      expect(loadSettings({}, dir)).toMatchObject({ redisUrl: 'redis-cluster://h1:7000,h2:7000', queuePrefix: '{bs}' });
      await writeFile(join(dir, 'base.yaml'), 'redis:\n  url: redis://u:s3cret@h1:7000,h2:7000\n');
      const err = thrown(() => loadSettings({}, dir));
      expect(errorCode(err)).toBe('E_CONFIG');
      expect(err.message).toContain(`${join(dir, 'base.yaml')}: redis.url: a redis:// URL names one node; for a Redis Cluster write redis-cluster://`);
      expect(err.message).not.toContain('s3cret');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
