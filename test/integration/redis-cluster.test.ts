import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { score, tempDir, writeRentals } from '../helpers/scoring.js';
import { noteMissing, REDIS_CLI, REDIS_SERVER } from '../helpers/tools.js';

const hasRedisServer = REDIS_SERVER !== undefined && REDIS_CLI !== undefined;
if (!hasRedisServer) noteMissing('the Redis Cluster test (redis-server or redis-cli is not on PATH)', 'redis-server');

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const MODEL = 'mindsdb/home_rentals_model';
const ROWS = 6_000;
const SEGMENT_ROWS = 500;

describe.skipIf(!hasRedisServer)('queue mode on a real Redis Cluster of three masters', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let input: string;
  let cluster: RedisCluster;

  beforeAll(async () => {
    tmp = await tempDir();
    input = join(tmp.dir, 'rentals.csv');
    await writeRentals(input, ROWS);
    cluster = await startRedisCluster(tmp.dir);
  });
  afterAll(async () => {
    await cluster?.stop();
    await tmp?.cleanup();
  });

  const f = useQueueFixture();

  it('two worker processes score a run enqueued by the CLI: byte-identical to score, every key on the slot of the prefix hash tag', async () => {
    await f.setup({ latencyMs: 5 }, cluster.url);
    f.worker();
    f.worker();
    const out = join(tmp.dir, 'queued');
    const enqueued = await runCli(['enqueue', input, '--model', MODEL, '--out', out, '--run-id', 'on-cluster', '--segment-rows', String(SEGMENT_ROWS)], {
      ...f.env(),
      MODEL_SERVICE_URL: f.sim.url,
    });
    expect({ code: enqueued.code, stdout: enqueued.stdout.trim() }).toEqual({ code: 0, stdout: 'on-cluster' });
    const status = await f.finished('on-cluster');
    expect(status).toMatchObject({ state: 'succeeded', progress: { rowsDone: ROWS, segmentsDone: ROWS / SEGMENT_ROWS } });

    const direct = join(tmp.dir, 'direct');
    await score(input, direct, { service: f.sim.url, runId: 'd', segmentRows: SEGMENT_ROWS });
    const queued = await readFile(join(out, 'on-cluster', 'predictions.csv'));
    expect(sha256(queued)).toBe(sha256(await readFile(join(direct, 'd', 'predictions.csv'))));

    // Both workers scored segments, not just took part.
    const logs = await f.queue.logs('on-cluster');
    const segmentPids = new Set(logs.filter((l) => l.startsWith('segment ')).map((l) => /\(\S+:(\d+), attempt/.exec(l)![1]));
    expect([...segmentPids].sort()).toEqual(f.workers.map((w) => String(w.child.pid)).sort());
    for (const w of f.workers) expect(w.log()).toContain(`"redis":"${cluster.url}"`);

    // The queue's keys are on the cluster: all on the slot of the prefix's hash tag, held by one master only.
    const slot = Number(await cluster.cli(cluster.ports[0], 'cluster', 'keyslot', f.prefix));
    const counts = await Promise.all(cluster.ports.map(async (p) => Number(await cluster.cli(p, 'cluster', 'countkeysinslot', String(slot)))));
    expect(counts.filter((n) => n > 0)).toHaveLength(1);
    const owner = cluster.ports[counts.findIndex((n) => n > 0)];
    const keys = (await cluster.cli(owner, 'cluster', 'getkeysinslot', String(slot), '10000')).trim().split('\n');
    expect(keys).toContain(`${f.prefix}:runs:on-cluster`);
    expect(keys).toContain(`${f.prefix}:progress:on-cluster`);
    expect(keys.every((k) => k.startsWith(`${f.prefix}:`))).toBe(true);
    // The other masters hold none of the run's keys: nothing spilled to other slots.
    for (const p of cluster.ports.filter((p) => p !== owner)) expect(await cluster.cli(p, 'dbsize')).toBe('0\n');
  });

  it('refuses a queue prefix without a hash tag, naming QUEUE_PREFIX, before reaching the cluster and without the password', async () => {
    const url = cluster.url.replace('redis-cluster://', 'redis-cluster://user:s3cret@');
    for (const args of [['worker'], ['enqueue', input, '--model', MODEL, '--out', join(tmp.dir, 'refused')], ['status']]) {
      const r = await runCli(args, { REDIS_URL: url, QUEUE_PREFIX: 'no-hash-tag' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/QUEUE_PREFIX "no-hash-tag" has no hash tag.*\{no-hash-tag\}.*\[E_CONFIG\]/);
      expect(r.stderr).toContain('redis-cluster://user:***@127.0.0.1:');
      expect(r.stderr).not.toContain('s3cret');
    }
  });

  // Last: it stops the cluster.
  it('a worker busy with a segment whose cluster goes away says so once, not per retry, and exits 0 on SIGTERM within its shutdown timeout, dropping the connections', async () => {
    // Predict hangs, so the worker holds a segment that cannot finish before its shutdown timeout:
    // it must then drop the connections and say so. (Idle, BullMQ's close may return at once or
    // wait for the cluster, by where ioredis is in its reconnection cycle: no fixed path to test.)
    await f.setup({ hangRate: 1 }, cluster.url);
    const w = f.worker(['--shutdown-timeout', '1000']);
    await f.queue.enqueue({
      input,
      model: MODEL,
      out: join(tmp.dir, 'away'),
      options: { service: f.sim.url, runId: 'away', segmentRows: SEGMENT_ROWS, timeout: 60_000 },
    });
    await waitFor('a predict request to hang', () => f.sim.stats.faults.hangs > 0, 30_000);
    await cluster.stop();
    await waitFor('the worker to say it waits for Redis', () => w.log().includes('waiting for Redis'), 15_000);
    // ioredis tries again many times a second; none of that may reach the log line by line.
    await sleep(2_000);
    expect(
      w
        .log()
        .split('\n')
        .filter((l) => l.includes('waiting for Redis')),
    ).toHaveLength(1);
    expect(w.log()).not.toContain('queue error');
    const asked = Date.now();
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    expect(Date.now() - asked).toBeLessThan(4_000);
    expect(w.log()).toContain('Redis is away: connections dropped');
  });
});
