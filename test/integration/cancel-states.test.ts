import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { RunStatus } from '../../src/queue/producer.js';
import type { RunState } from '../../src/scoring/run-lifecycle.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';

// A cancelled run has two states: `cancelling` from the request until every job of it has
// stopped, on every worker, then `cancelled`; once it reads `cancelled`, no predict request of it
// starts. Real worker processes, real Redis, the simulator counting what it receives.

const ROWS = 30_000;
const SEGMENT_ROWS = 2_000;
const MODEL = 'mindsdb/home_rentals_model';
const options = (runId: string) => ({ runId, segmentRows: SEGMENT_ROWS, batchSize: 50 });
const files = useRentalsInput(ROWS);

const f = useQueueFixture();

/** Once the run's job has ended and none of its segment jobs is left, running or to run: nothing of it is at work. */
const settled = (runId: string) =>
  waitFor<RunStatus>(
    `run ${runId}'s job to end and its segment jobs to be gone`,
    async () => {
      const status = await f.queue.get(runId);
      return status?.finishedAt && (await f.segmentJobs()) === 0 ? status : undefined;
    },
    15_000,
  );

describe('cancelling, then cancelled', () => {
  it('reads cancelling while its segments stop, then cancelled; no predict request arrives after it reads cancelled', async () => {
    // Two workers of 2 requests, 50-row batches, 50 ms a request: each has predict requests in flight all the time.
    await f.setup({ latencyMs: 50 });
    f.worker(['--max-in-flight', '2']);
    f.worker(['--max-in-flight', '2']);
    const runId = 'two-states';
    await f.queue.enqueue({ input: files.input, model: MODEL, out: join(files.dir, 'two-states'), options: options(runId) });
    await waitFor('a segment to be done', async () => ((await f.queue.get(runId))?.progress?.segmentsDone ?? 0) >= 1, 30_000);

    const asked = Date.now();
    const cancel = await runCli(['cancel', runId], f.env());
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(new RegExp(`^${runId} {2}cancelling {2}`));
    expect(cancel.stderr).toBe(`its jobs stop within seconds; batch-scorer status ${runId} --watch follows it until it is cancelled\n`);

    // Read as `status` and the run API read it, until it says cancelled.
    const seen: RunState[] = [];
    const reportedAt = await waitFor(
      'the run to read cancelled',
      async () => {
        const { state } = (await f.queue.get(runId))!;
        seen.push(state);
        return state === 'cancelled' && Date.now();
      },
      10_000,
      20,
    );
    expect(seen.filter((s) => s !== 'cancelling')).toEqual(['cancelled']);

    // The workers finish what they were doing: the run job ends, and it stays cancelled.
    const ended = await settled(runId);
    expect(ended.state).toBe('cancelled');
    expect((await f.queue.list({ state: 'cancelled' })).map((r) => r.runId)).toEqual([runId]);
    // Requests were being sent when it was cancelled; none arrived once it read cancelled.
    expect(f.sim.stats.lastPredictAt).toBeGreaterThan(asked);
    expect(f.sim.stats.lastPredictAt).toBeLessThanOrEqual(reportedAt);
  });

  it('stays cancelling while a stuck worker holds one of its segments, and is cancelled once that segment is taken from it', async () => {
    await f.setup({ latencyMs: 50 });
    // One segment at a time, under a lock of 10 s: renewed every 5 s at most, so it holds for 5 s
    // at least once the worker is stopped (an expired lock is no longer the worker's, and the
    // cancel would remove its job at once).
    const stuck = f.worker(['--max-in-flight', '2', '--segments', '1', '--lock-duration', '10000']);
    const runId = 'stuck';
    await f.queue.enqueue({ input: files.input, model: MODEL, out: join(files.dir, 'stuck'), options: options(runId) });
    await waitFor(
      'a segment to be done and the next one taken',
      async () => ((await f.queue.get(runId))?.progress?.segmentsDone ?? 0) >= 1 && (await f.segmentJobs(['active'])) === 1,
      30_000,
    );
    stuck.child.kill('SIGSTOP');
    expect(await f.segmentJobs(['active'])).toBe(1);

    const cancel = await runCli(['cancel', runId, '--json'], f.env());
    expect([cancel.code, (JSON.parse(cancel.stdout) as RunStatus).state]).toEqual([0, 'cancelling']);
    // Whatever asks, it is cancelling: its segment may still be scored, for all anyone can tell.
    expect((await runCli(['status', runId], f.env())).stdout).toMatch(new RegExp(`^${runId} {2}cancelling {2}`));
    expect((await f.queue.list({ state: 'cancelling' })).map((r) => r.runId)).toEqual([runId]);
    expect(await f.queue.list({ state: 'cancelled' })).toEqual([]);
    // Not to be resumed or enqueued again until its jobs have stopped.
    await expect(f.queue.resume(runId)).rejects.toMatchObject({ code: 'E_RUN_CONFLICT', message: expect.stringContaining('is cancelling') as unknown });
    const again = await runCli(['enqueue', files.input, '--model', MODEL, '--out', join(files.dir, 'stuck'), '--run-id', runId], f.env());
    expect([again.code, again.stderr]).toEqual([2, expect.stringMatching(/is cancelling: its jobs are still stopping; .*\[E_RUN_CONFLICT\]\n$/)]);
    const predicts = f.sim.stats.predictRequests;

    // Another worker (checking for stalled jobs every second) finds the stuck one's lock expired,
    // takes the segment back, and skips it.
    f.worker();
    await waitFor('the run to read cancelled', async () => (await f.queue.get(runId))?.state === 'cancelled', 20_000);
    // Once cancelled, a worker may still take a job of the run, only to read the marker and skip
    // it: the run stays cancelled meanwhile, and (below) nothing more is scored.
    await waitFor('no job of the run to be active', async () => (await f.segmentJobs(['active'])) === 0, 20_000);
    expect((await f.queue.get(runId))?.state).toBe('cancelled');
    const ended = await settled(runId);
    expect(ended.state).toBe('cancelled');
    const manifest = JSON.parse(await readFile(join(files.dir, 'stuck', runId, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({ state: 'cancelled', error: { code: 'E_CANCELLED' } });
    // The other worker scored nothing of it: neither the segment it took back nor a plan.
    expect(f.sim.stats.predictRequests).toBe(predicts);
  });
});
