import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, type CliProcess } from '../helpers/cli.js';
import { freePort, startRedis, startWorkerProcess, uniquePrefix, waitFor, type WorkerProcess } from '../helpers/queue.js';
import { tempDir, writeRentals } from '../helpers/scoring.js';

/** What the commands may take at most to give up on a Redis that is not there. */
const GIVE_UP_MS = 15_000;

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
let port: number;
/** Nothing listens on its port; the password must never be shown. */
let url: string;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, 10);
  port = await freePort();
  url = `redis://user:s3cret@127.0.0.1:${port}`;
});
afterAll(() => tmp.cleanup());

/** Runs the CLI and checks it gave up in time with one line on stderr: the masked URL, the code, what to check. */
async function givesUp(args: string[], redisUrl: string, shownUrl: string) {
  const started = Date.now();
  const r = await runCli(args, { REDIS_URL: redisUrl, QUEUE_PREFIX: uniquePrefix() });
  expect(Date.now() - started).toBeLessThan(GIVE_UP_MS);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^batch-scorer: Redis at .* did not answer .*check REDIS_URL and that Redis is running \[E_REDIS_UNAVAILABLE\]$/);
  expect(lines[0]).toContain(shownUrl);
  return lines[0];
}

describe('commands against a Redis that is not there', () => {
  it.each([
    ['enqueue', () => ['enqueue', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'out')]],
    ['status', () => ['status']],
    ['status <runId> --watch', () => ['status', 'some-run', '--watch', '--logs']],
    ['schedule sync', () => ['schedule', 'sync', '--jobs', fileURLToPath(new URL('../../jobs', import.meta.url))]],
    ['schedule list', () => ['schedule', 'list']],
  ])('%s gives up within seconds: exit 2, one line naming the URL without its password', async (_, args) => {
    const line = await givesUp(args(), url, `redis://user:***@127.0.0.1:${port}`);
    expect(line).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(line).not.toContain('s3cret');
  });

  it('status names an unknown host the same way', async () => {
    await givesUp(['status'], 'redis://no-such-host.invalid:6379', 'redis://no-such-host.invalid:6379');
  });

  it('enqueue still checks its options first: a bad flag is reported without waiting for Redis', async () => {
    const r = await runCli(['enqueue', input, '--model', 'mindsdb/home_rentals_model', '--out', tmp.dir, '--batch-size', '0'], { REDIS_URL: url });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--batch-size: must be at least 1 \[E_USAGE\]/);
    expect(r.stderr).not.toMatch(/E_REDIS_UNAVAILABLE/);
  });
});

describe('commands following runs when Redis goes away', () => {
  it('enqueue --wait, status <runId> --watch and status --watch say so once, in our words: exit 2, E_REDIS_UNAVAILABLE', async () => {
    const redisPort = await freePort();
    const redis = await startRedis(redisPort, tmp.dir, { persist: false });
    // No worker: the run waits on the queue, followed, until Redis goes.
    const env = { REDIS_URL: `redis://127.0.0.1:${redisPort}`, QUEUE_PREFIX: uniquePrefix(), LOG_LEVEL: 'warn' };
    const runId = 'away';
    const clis: CliProcess[] = [];
    try {
      const waiting = startCli(['enqueue', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'away'), '--run-id', runId, '--wait'], env);
      clis.push(waiting);
      await waitFor('the run to be enqueued', () => waiting.stdout() === `${runId}\n`, GIVE_UP_MS);
      const watching = startCli(['status', runId, '--watch'], env);
      const listing = startCli(['status', '--watch'], env);
      clis.push(watching, listing);
      await waitFor('both watches to show the run', () => [watching, listing].every((c) => c.stdout().includes(`${runId}  queued`)), GIVE_UP_MS);

      redis.kill('SIGKILL');
      await once(redis, 'exit');
      const gone = Date.now();
      await waitFor('the three commands to give up', () => clis.every((c) => c.child.exitCode !== null), GIVE_UP_MS);
      expect(Date.now() - gone).toBeLessThan(GIVE_UP_MS);
      for (const cli of clis) {
        expect(await cli.exited).toBe(2);
        const stderr = cli.stderr();
        expect(stderr).not.toContain('maxRetriesPerRequest');
        const lines = stderr.trimEnd().split('\n');
        expect(lines, stderr).toHaveLength(1);
        expect(lines[0]).toMatch(
          new RegExp(
            `^batch-scorer: Redis at redis://127\\.0\\.0\\.1:${redisPort} did not answer within 5 s \\(connect ECONNREFUSED 127\\.0\\.0\\.1:${redisPort}\\); check REDIS_URL and that Redis is running.* \\[E_REDIS_UNAVAILABLE\\]$`,
          ),
        );
      }
      // Those that followed the run say how to follow it again.
      for (const cli of [waiting, watching]) {
        expect(cli.stderr()).toContain(
          `; stopped following run ${runId}: once Redis answers, batch-scorer status ${runId} --watch follows it again [E_REDIS_UNAVAILABLE]`,
        );
      }
    } finally {
      redis.kill('SIGKILL');
      for (const cli of clis) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});

describe('a worker started while Redis is not there', () => {
  let worker: WorkerProcess | undefined;
  afterAll(async () => {
    if (worker && worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await worker?.exited;
  });

  const waitingLines = (log: string) => log.split('\n').filter((l) => l.includes('waiting for Redis'));

  it('says once that it waits for Redis, does not claim to have started, and exits 0 on SIGTERM within the shutdown timeout', async () => {
    worker = startWorkerProcess({ REDIS_URL: url, QUEUE_PREFIX: uniquePrefix() }, ['--shutdown-timeout', '2000']);
    const w = worker;
    await waitFor('the worker to say it waits for Redis', () => waitingLines(w.log()).length > 0, GIVE_UP_MS);
    // ioredis tries again every 2 s at most, and each failed try is an error event: after 3 s
    // several have come, and they must not have been logged one by one.
    const since = Date.now();
    await waitFor('3 s to pass', () => Date.now() - since > 3_000, 5_000);
    const log = w.log();
    expect(waitingLines(log)).toHaveLength(1);
    expect(JSON.parse(waitingLines(log)[0])).toMatchObject({
      redis: `redis://user:***@127.0.0.1:${port}`,
      err: { message: `connect ECONNREFUSED 127.0.0.1:${port}`, code: 'ECONNREFUSED' },
    });
    expect(log).not.toContain('worker started');
    expect(log).not.toContain('queue error');

    const stopping = Date.now();
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(GIVE_UP_MS);
    const all = w.log();
    expect(all).toContain('worker stopped');
    expect(all).not.toContain('s3cret');
    expect(all).not.toContain('Unhandled error event');
    expect(all).not.toMatch(/^\s+at /m);
    // Every line is one of the worker's JSON log lines: nothing printed around the logger.
    for (const line of all.trimEnd().split('\n')) expect(() => JSON.parse(line) as unknown).not.toThrow();
  });

  it('starts once Redis comes: "worker started" after "connected to Redis"', async () => {
    const redisPort = await freePort();
    worker = startWorkerProcess({ REDIS_URL: `redis://127.0.0.1:${redisPort}`, QUEUE_PREFIX: uniquePrefix() }, ['--shutdown-timeout', '2000']);
    const w = worker;
    await waitFor('the worker to say it waits for Redis', () => waitingLines(w.log()).length > 0, GIVE_UP_MS);
    expect(w.log()).not.toContain('worker started');
    const redis = await startRedis(redisPort, tmp.dir);
    try {
      await waitFor('the worker to start', () => w.log().includes('worker started'), GIVE_UP_MS);
      const messages = w
        .log()
        .trimEnd()
        .split('\n')
        .map((l) => (JSON.parse(l) as { msg: string }).msg);
      expect(messages).toEqual(['waiting for Redis', 'connected to Redis', 'worker started']);
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
      expect(w.log()).toContain('worker stopped');
    } finally {
      redis.kill('SIGKILL');
    }
  });
});
