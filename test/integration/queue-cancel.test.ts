import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { RunStatus } from '../../src/queue/producer.js';
import { runCli, startCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { score, tempDir, writeRentals } from '../helpers/scoring.js';

// Cancelling queued runs (batch-scorer cancel, RunQueue.cancel as DELETE /runs/:id uses it) and
// resuming them: real worker processes, the signal going through Redis only.

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let tmp: Awaited<ReturnType<typeof tempDir>>;
let long: string;
let short: string;
const ROWS = 40_000;
const SEGMENT_ROWS = 2_000;
const MODEL = 'mindsdb/home_rentals_model';

beforeAll(async () => {
  tmp = await tempDir();
  long = join(tmp.dir, 'long.csv');
  short = join(tmp.dir, 'short.csv');
  await writeRentals(long, ROWS);
  await writeRentals(short, 500);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();

/** The run once its job has ended (not only marked cancelled while its segments stop). */
const ended = (runId: string) =>
  waitFor<RunStatus>(
    `run ${runId}'s job to end`,
    async () => {
      const s = await f.queue.get(runId);
      return s?.finishedAt ? s : undefined;
    },
    15_000,
  );

describe('cancelling and resuming queued runs', () => {
  it('a running run cancelled from the CLI stops within seconds on every worker, and resumes to a byte-identical result', async () => {
    // Two workers of 2 requests, 50-row batches, 50 ms a request: about 4000 rows/s, 10 s for the file.
    await f.setup({ latencyMs: 50 });
    f.worker(['--max-in-flight', '2']);
    f.worker(['--max-in-flight', '2']);
    const out = join(tmp.dir, 'cancel');
    const runId = 'cx';
    await f.queue.enqueue({ input: long, model: MODEL, out, options: { runId, segmentRows: SEGMENT_ROWS, batchSize: 50 } });
    await waitFor('two segments done', async () => ((await f.queue.get(runId))?.progress?.segmentsDone ?? 0) >= 2, 30_000);

    const cancelled = await runCli(['cancel', runId, '--json'], f.env());
    expect(cancelled.code).toBe(0);
    // Its segments were being scored: they stop within about a second, and until then it is cancelling.
    expect(JSON.parse(cancelled.stdout) as RunStatus).toMatchObject({ runId, state: 'cancelling' });

    // Within seconds nothing of it runs or waits, and no predict request is sent any more.
    await waitFor('no segment job left', async () => (await f.segmentJobs()) === 0, 5_000);
    const status = await ended(runId);
    expect(status.state).toBe('cancelled');
    expect(status.failedReason).toBeUndefined();
    const requests = f.sim.stats.predictRequests;
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a window in which a running segment would send ~60 requests
    expect(f.sim.stats.predictRequests).toBe(requests);

    const folder = join(out, runId);
    expect(existsSync(join(folder, '_SUCCESS'))).toBe(false);
    expect(existsSync(join(folder, '_work', 'run.json'))).toBe(true);
    const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({ state: 'cancelled', error: { code: 'E_CANCELLED' } });
    const kept = status.progress!.segmentsDone;
    expect(kept).toBeGreaterThanOrEqual(2);
    expect(kept).toBeLessThan(ROWS / SEGMENT_ROWS);

    // status shows it cancelled, with the command that resumes it; cancelling again answers the same.
    const shown = await runCli(['status', runId], f.env());
    expect(shown.stdout).toMatch(
      new RegExp(`^${runId}  cancelled  .*\\n  resume: batch-scorer enqueue ${long} --model ${MODEL} --out ${out} .*--run-id ${runId}\\n$`),
    );
    expect(await f.queue.cancel(runId)).toMatchObject({ state: 'cancelled' });
    expect((await f.queue.list({ state: 'cancelled' })).map((r) => r.runId)).toEqual([runId]);

    const resumed = await runCli(['resume', runId, '--json'], f.env());
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout) as unknown).toEqual({ runId, resumed: true });
    const done = await f.finished(runId);
    expect(done.state).toBe('succeeded');
    // Only the segments it had not finished were scored again.
    expect((await f.queue.logs(runId))[0]).toMatch(
      new RegExp(`^planned: ${ROWS} rows in ${ROWS / SEGMENT_ROWS} segments \\(${ROWS / SEGMENT_ROWS - kept} to score\\)`),
    );
    expect(JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8'))).toMatchObject({ state: 'succeeded' });

    await score(long, join(tmp.dir, 'direct'), { service: f.sim.url, runId: 'd', segmentRows: SEGMENT_ROWS, batchSize: 50, concurrency: 16 });
    for (const file of ['predictions.csv', 'errors.jsonl']) {
      const [queued, direct] = await Promise.all([readFile(join(folder, file)), readFile(join(tmp.dir, 'direct', 'd', file))]);
      expect(sha256(queued)).toBe(sha256(direct));
    }
  });

  it('a run cancelled while waiting never starts, enqueue --wait ends with exit 1, and it resumes from the start', async () => {
    await f.setup();
    const out = join(tmp.dir, 'waiting');
    const runId = 'wx';
    const waiting = startCli(['enqueue', short, '--model', MODEL, '--out', out, '--run-id', runId, '--wait'], f.env());
    await waitFor('the run to be waiting', async () => (await f.queue.get(runId))?.state === 'queued', 10_000);
    expect((await f.queue.list({ state: 'queued' })).map((r) => r.runId)).toEqual([runId]);

    expect(await f.queue.cancel(runId)).toMatchObject({ runId, state: 'cancelled' });
    expect(await waiting.exited).toBe(1);
    expect(waiting.stderr()).toMatch(new RegExp(`${runId}  cancelled  .*\\n  resume: batch-scorer enqueue ${short} .*--run-id ${runId}\\n$`));
    expect(await f.queue.list({ state: 'queued' })).toEqual([]);

    // A worker that comes later ends its job as cancelled without asking the service anything.
    f.worker();
    const status = await ended(runId);
    expect(status.state).toBe('cancelled');
    expect(await f.queue.logs(runId)).toEqual(['cancelled']);
    expect(f.sim.stats.describeRequests + f.sim.stats.predictRequests).toBe(0);
    expect(existsSync(join(out, runId))).toBe(false);

    await expect(f.queue.resume('nosuch')).rejects.toMatchObject({ code: 'E_RUN_NOT_FOUND' });
    expect(await f.queue.resume(runId)).toEqual({ runId, resumed: true });
    expect(await f.finished(runId)).toMatchObject({ state: 'succeeded', progress: { rowsDone: 500 } });
    await expect(f.queue.resume(runId)).rejects.toMatchObject({ code: 'E_RUN_CONFLICT' });
  });

  it('batch-scorer cancel refuses an unknown run and a finished one with exit 2', async () => {
    await f.setup();
    const unknown = await runCli(['cancel', 'nosuch'], f.env());
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "batch-scorer: no run nosuch in the queue (finished runs are kept as the workers' retention says: by default 7 days, failed ones 30; see RETENTION_JOBS) [E_RUN_NOT_FOUND]\n",
    );

    f.worker();
    const { runId } = await f.queue.enqueue({ input: short, model: MODEL, out: join(tmp.dir, 'finished'), options: { runId: 'fx' } });
    expect(await f.finished(runId)).toMatchObject({ state: 'succeeded' });
    const late = await runCli(['cancel', runId], f.env());
    expect(late.code).toBe(2);
    expect(late.stderr).toBe('batch-scorer: run fx has succeeded; it cannot be cancelled [E_RUN_CONFLICT]\n');
    expect((await f.queue.get(runId))?.state).toBe('succeeded');
  });
});
