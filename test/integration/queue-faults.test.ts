import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { createSimulator } from '../../src/simulator/server.js';
import { startRedis, useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { score, tempDir, writeRentals } from '../helpers/scoring.js';

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
const ROWS = 12_000;
const SEGMENT_ROWS = 2_000;
const f = useQueueFixture();

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, ROWS);
});
afterAll(() => tmp.cleanup());

async function direct(): Promise<string> {
  const out = join(tmp.dir, `direct-${Math.random().toString(16).slice(2)}`);
  await score(input, out, { service: f.sim.url, runId: 'd', segmentRows: SEGMENT_ROWS });
  return sha256(await readFile(join(out, 'd', 'predictions.csv')));
}

describe('queue mode under faults', () => {
  it('a Redis restart during a run delays it but neither fails nor corrupts it', async () => {
    const port = 16_400 + Math.floor(Math.random() * 1000);
    const dir = join(tmp.dir, `redis-${port}`);
    await mkdir(dir);
    let redis = await startRedis(port, dir);
    try {
      await f.setup({ latencyMs: 20 }, `redis://127.0.0.1:${port}`);
      const expected = await direct();
      const out = join(tmp.dir, 'restart');
      f.worker();
      const { runId } = await f.queue.enqueue({
        input,
        model: 'mindsdb/home_rentals_model',
        out,
        options: { service: f.sim.url, runId: 'restart', segmentRows: SEGMENT_ROWS, batchSize: 100 },
      });
      const segments = join(out, runId, '_work', 'segments');
      await waitFor('a segment to finish', async () => existsSync(segments) && (await readdir(segments)).some((n) => n.endsWith('.done.json')));
      redis.kill('SIGTERM');
      await once(redis, 'exit');
      redis = await startRedis(port, dir);
      const status = await f.finished(runId);
      expect(status.state).toBe('succeeded');
      expect(sha256(await readFile(join(out, runId, 'predictions.csv')))).toBe(expected);
    } finally {
      redis.kill('SIGKILL');
    }
  });

  it('keeps the lock of a segment that outlasts the lock duration: no segment is scored twice', async () => {
    await f.setup({ latencyMs: 150 });
    const out = join(tmp.dir, 'long');
    // Lock of 1 s; each segment takes about 2000 rows / 100 per batch / 2 at once * 150 ms = 1.5 s or more.
    f.worker(['--lock-duration', '1000', '--max-in-flight', '2']);
    const before = f.sim.stats.predictRows;
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { service: f.sim.url, runId: 'long', segmentRows: SEGMENT_ROWS, batchSize: 100 },
    });
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    // The rows of the run once each, plus the one-row probe at planning.
    expect(f.sim.stats.predictRows - before).toBe(ROWS + 1);
  });

  it('fails the run when a segment passes the error threshold: the parent does not wait forever', async () => {
    await f.setup();
    const rows = Array.from({ length: 3_000 }, (_, i) => rentalRow(i));
    for (let i = 2_100; i < 2_200; i++) rows[i][4] = '__engine_error__';
    const bad = join(tmp.dir, 'bad.csv');
    await writeFile(bad, [RENTAL_COLUMNS, ...rows].map(csvLine).join(''));
    f.worker();
    const out = join(tmp.dir, 'threshold');
    const { runId } = await f.queue.enqueue({
      input: bad,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { service: f.sim.url, runId: 'threshold', segmentRows: 1_000, batchSize: 50, maxErrorRate: 0.01 },
    });
    const status = await f.finished(runId);
    expect(status.state).toBe('failed');
    expect(reasonOf(status)).toMatch(/E_ERROR_RATE/);
    expect(JSON.parse(await readFile(join(out, runId, 'manifest.json'), 'utf8'))).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE' } });
    expect(existsSync(join(out, runId, '_SUCCESS'))).toBe(false);
  });

  it('a second signal stops a worker at once', async () => {
    await f.setup({ hangRate: 1 });
    const w = f.worker(['--shutdown-timeout', '60000']);
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out: join(tmp.dir, 'twice'),
      options: { service: f.sim.url, runId: 'twice', segmentRows: SEGMENT_ROWS, timeout: 60_000 },
    });
    // Describe answers; predict hangs, so the worker is busy with a request that will not end. Signalled
    // before a request hangs (between planning and taking a segment, say), it would have nothing in
    // flight and stop at once on the first signal.
    await waitFor('the worker to be planning', async () => (await f.queue.get(runId))?.state === 'running');
    await waitFor('a predict request to hang', () => f.sim.stats.faults.hangs > 0);
    w.child.kill('SIGTERM');
    await waitFor('the first signal to be taken', () => w.log().includes('shutting down'));
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(130);
  });

  it('a failed run enqueued again resumes: finished segments are kept and the output is byte-identical', async () => {
    await f.setup({ token: 'right-token', latencyMs: 20 });
    const out = join(tmp.dir, 'refail');
    const options = { service: f.sim.url, runId: 'refail', segmentRows: SEGMENT_ROWS, batchSize: 100 };
    const good = f.worker(['--segments', '1'], { MODEL_SERVICE_TOKEN: 'right-token' });
    const { runId } = await f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out, options });
    const segments = join(out, runId, '_work', 'segments');
    const done = async () => (existsSync(segments) ? (await readdir(segments)).filter((n) => n.endsWith('.done.json')).length : 0);
    await waitFor('two segments done', async () => (await done()) >= 2);
    good.child.kill('SIGKILL');
    await good.exited;
    // A misconfigured worker: the service refuses its token, which no retry can mend.
    const wrong = f.worker([], { MODEL_SERVICE_TOKEN: 'wrong-token' });
    const failed = await f.finished(runId);
    wrong.child.kill('SIGTERM');
    await wrong.exited;
    expect(failed.state).toBe('failed');
    expect(reasonOf(failed)).toMatch(/401.*E_SERVICE_UNAUTHORIZED/);
    const kept = await done();
    expect(kept).toBeGreaterThanOrEqual(2);

    const rowsBefore = f.sim.stats.predictRows;
    f.worker([], { MODEL_SERVICE_TOKEN: 'right-token' });
    // The killed worker's segment stays locked until its lock expires; until then the run cannot be replaced.
    const again = await waitFor(
      'the failed run to be enqueued again',
      () => f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out, options }).catch(() => undefined),
      30_000,
      250,
    );
    expect(again).toEqual({ runId, created: true, resumed: true });
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    // The segments finished before the failure count in the resumed run's progress.
    expect(status.progress).toMatchObject({ rowsDone: ROWS, rowsTotal: ROWS, segmentsDone: 6, segmentsTotal: 6 });
    expect(f.sim.stats.predictRows - rowsBefore).toBeLessThanOrEqual(ROWS - kept * SEGMENT_ROWS);
    const sim = f.sim;
    const expected = await score(input, join(tmp.dir, 'refail-direct'), {
      service: sim.url,
      runId: 'd',
      segmentRows: SEGMENT_ROWS,
      tokens: new Map([[new URL(sim.url).origin, 'right-token']]),
    });
    expect(sha256(await readFile(join(out, runId, 'predictions.csv')))).toBe(expected.outputs[0].sha256);
  });

  it('retries a segment when the service is away longer than the request retries, and finishes', async () => {
    await f.setup({ latencyMs: 5 });
    const expected = await direct();
    const out = join(tmp.dir, 'outage');
    // Half the requests fail (500s and resets) and the run allows no request retries: segments fail and BullMQ retries them.
    const flaky = await createSimulator({ port: 0, errorRate: 0.4, resetRate: 0.1, seed: 11 });
    try {
      f.worker();
      const { runId } = await f.queue.enqueue({
        input,
        model: 'mindsdb/home_rentals_model',
        out,
        options: { service: flaky.url, runId: 'outage', segmentRows: SEGMENT_ROWS, retries: 2 },
      });
      const status = await f.finished(runId, 120_000);
      expect(status.state).toBe('succeeded');
      expect(sha256(await readFile(join(out, runId, 'predictions.csv')))).toBe(expected);
      const logs = await f.queue.logs(runId);
      expect(logs.some((l) => /attempt [2-9]/.test(l))).toBe(true);
    } finally {
      await flaky.close();
    }
  });
});
