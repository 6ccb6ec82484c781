import { once } from 'node:events';
import { readdir, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { freePort, startRedis, useQueueFixture, waitFor } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';

// Following a run that vanishes from Redis (a restart without persistence): `enqueue --wait` and
// `status --watch` end with E_RUN_LOST instead of waiting for ever, and say how to resume it.

const ROWS = 6_000;
const SEGMENT_ROWS = 2_000;
const MODEL = 'mindsdb/home_rentals_model';
const files = useRentalsInput(ROWS);

const f = useQueueFixture();

/** The segments of a run folder that are done (their done marker is written last). */
async function segmentsDone(folder: string): Promise<number> {
  const names = await readdir(join(folder, '_work', 'segments')).catch(() => []);
  return names.filter((n) => n.endsWith('.done.json')).length;
}

describe('a followed run that vanishes from Redis', () => {
  it('ends enqueue --wait and status --watch with E_RUN_LOST within 15 s, with a resume command that works; the worker lives on', async () => {
    const port = await freePort();
    const dir = join(files.dir, 'redis');
    await mkdir(dir);
    let redis = await startRedis(port, dir, { persist: false });
    try {
      // 250 ms a request, 50-row batches, 2 at once, one segment at a time: 5 s a segment.
      await f.setup({ latencyMs: 250 }, `redis://127.0.0.1:${port}`);
      const worker = f.worker(['--max-in-flight', '2', '--segments', '1']);
      const runId = 'lost';
      const out = join(files.dir, 'out');
      const folder = join(out, runId);
      const args = ['enqueue', files.input, '--model', MODEL, '--out', out, '--run-id', runId, '--segment-rows', String(SEGMENT_ROWS), '--batch-size', '50'];
      const waiting = startCli([...args, '--wait'], f.env());
      await waitFor('a segment to be done', async () => (await segmentsDone(folder)) >= 1, 30_000);
      const watching = startCli(['status', runId, '--watch'], f.env());
      await waitFor('status --watch to show the run running', () => watching.stdout().includes(`${runId}  running`), 10_000);
      // The worker is scoring the second segment when the keys vanish (a segment is 40 requests).
      const perSegment = SEGMENT_ROWS / 50;
      await waitFor('the second segment to be scoring', () => f.sim.stats.predictRequests > perSegment, 10_000);

      redis.kill('SIGKILL');
      await once(redis, 'exit');
      redis = await startRedis(port, dir, { persist: false });
      const restarted = Date.now();
      await waitFor('enqueue --wait and status --watch to exit', () => waiting.child.exitCode !== null && watching.child.exitCode !== null, 15_000);
      expect(Date.now() - restarted).toBeLessThan(15_000);

      for (const cli of [waiting, watching]) {
        expect(await cli.exited).toBe(1);
        const lines = cli.stderr().trimEnd().split('\n');
        expect(lines.at(-1)).toMatch(
          new RegExp(
            `^batch-scorer: run ${runId} vanished from the queue .*the segments it finished are kept in ${folder}; enqueue it again under its run id to resume it: batch-scorer enqueue ${files.input} --model ${MODEL} --out ${out} .*--run-id ${runId}.* \\[E_RUN_LOST\\]$`,
          ),
        );
      }
      // The same run (not just any): the command it printed is the one enqueue --wait was given.
      expect(waiting.stderr()).toContain(`batch-scorer ${args.join(' ')} --wait [E_RUN_LOST]`);
      // GET /runs/:id and `status` of a vanished run: simply not found.
      const status = await runCli(['status', runId], f.env());
      expect([status.code, status.stderr]).toEqual([2, expect.stringContaining('[E_RUN_NOT_FOUND]')]);

      // The worker held the next segment when the keys vanished: it neither crashes nor loops; once
      // it finds that segment's lock gone, it stops scoring it (what it finished stays in storage).
      await waitFor('the worker to give up the segment it held', () => worker.log().includes('lock lost'), 10_000);
      const predictsStopped = f.sim.stats.predictRequests;
      expect(worker.child.exitCode).toBeNull();
      const done = await segmentsDone(folder);
      expect(done).toBe(1);

      // The printed command resumes it, keeping the segments it had finished.
      const resume = /enqueue it again under its run id to resume it: batch-scorer (.*) \[E_RUN_LOST\]$/.exec(waiting.stderr().trimEnd())![1].split(' ');
      const resumed = await runCli(resume, f.env());
      expect([resumed.code, resumed.stderr]).toEqual([0, expect.stringMatching(new RegExp(`^${runId}  succeeded  ${ROWS}/${ROWS} rows`, 'm'))]);
      expect(f.sim.stats.predictRequests).toBeGreaterThan(predictsStopped);
      expect((await f.queue.logs(runId))[0]).toMatch(new RegExp(`^planned: ${ROWS} rows in 3 segments \\(2 to score\\)`));
    } finally {
      redis.kill('SIGKILL');
    }
  });
});
