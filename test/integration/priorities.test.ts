import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { RunStatus } from '../../src/queue/producer.js';
import { SEGMENTS_QUEUE, segmentJobRun } from '../../src/queue/queues.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { score, useRentalsInput } from '../helpers/scoring.js';

const MODEL = 'mindsdb/home_rentals_model';
const SEGMENT_ROWS = 200;
const LOW_SEGMENTS = 6;
const HIGH_SEGMENTS = 3;

// The low run's input; the high run scores its first rows (--limit), in fewer segments.
const files = useRentalsInput(LOW_SEGMENTS * SEGMENT_ROWS);

const f = useQueueFixture();

describe('run priorities on the queue', () => {
  // Three processes and two runs on two busy cores: room beyond the 60 s default.
  it("takes a high-priority run's segments before those of a low-priority run already waiting, and writes the same output", async () => {
    await f.setup({ latencyMs: 5 });
    const segments = new Queue(SEGMENTS_QUEUE, { connection: { url: f.redisUrl }, prefix: f.prefix });
    try {
      // Runs are planned (their segments enqueued) while no segment is taken: the order they are
      // taken in once the queue goes on is the queue's alone.
      await segments.pause();
      f.worker(['--segments', '1']);
      const out = join(files.dir, 'out');
      await f.queue.enqueue({ input: files.input, model: MODEL, out, options: { runId: 'low', segmentRows: SEGMENT_ROWS, priority: 'low' } });
      const waiting = async () => (await segments.getJobCounts('prioritized')).prioritized;
      await waitFor('the low run to be planned', async () => (await waiting()) === LOW_SEGMENTS, 30_000);
      const high = await runCli(
        [
          ...['enqueue', files.input, '--model', MODEL, '--out', out, '--run-id', 'high'],
          ...['--segment-rows', String(SEGMENT_ROWS), '--limit', String(HIGH_SEGMENTS * SEGMENT_ROWS), '--priority', 'high', '--json'],
        ],
        f.env(),
      );
      expect([high.code, JSON.parse(high.stdout)]).toEqual([0, { runId: 'high', created: true }]);
      await waitFor('the high run to be planned', async () => (await waiting()) === LOW_SEGMENTS + HIGH_SEGMENTS, 30_000);
      const shown = JSON.parse((await runCli(['status', 'high', '--json'], f.env())).stdout) as RunStatus;
      expect([shown.priority, shown.options.priority]).toEqual(['high', 'high']);
      expect((await f.queue.get('low'))?.priority).toBe('low');
      await segments.resume();

      expect((await f.finished('low')).state).toBe('succeeded');
      expect((await f.finished('high')).state).toBe('succeeded');
      const done = (await segments.getJobs(['completed'])).sort((a, b) => a.processedOn! - b.processedOn!);
      expect(done).toHaveLength(LOW_SEGMENTS + HIGH_SEGMENTS);
      // One segment at a time: every high one, then every low one, though the low ones waited first.
      expect(done.map((j) => segmentJobRun(j.id!))).toEqual([...Array<string>(HIGH_SEGMENTS).fill('high'), ...Array<string>(LOW_SEGMENTS).fill('low')]);
      expect(done.map((j) => j.priority)).toEqual([...Array<number>(HIGH_SEGMENTS).fill(1), ...Array<number>(LOW_SEGMENTS).fill(3)]);

      // Priority orders the work, never what it writes.
      await score(files.input, join(files.dir, 'direct'), {
        service: f.sim.url,
        runId: 'direct',
        segmentRows: SEGMENT_ROWS,
        limit: HIGH_SEGMENTS * SEGMENT_ROWS,
      });
      expect(await readFile(join(out, 'high', 'predictions.csv'))).toEqual(await readFile(join(files.dir, 'direct', 'direct', 'predictions.csv')));
    } finally {
      await segments.close();
    }
  }, 120_000);
});
