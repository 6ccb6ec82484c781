import { Job, Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { RUNS_QUEUE, SEGMENTS_QUEUE } from '../../src/queue/queues.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';

const f = useQueueFixture();

describe('job data a worker cannot read', () => {
  it('fails the job at once with E_USAGE naming the field, and the worker goes on', async () => {
    await f.setup();
    const worker = f.worker();
    const connection = { url: f.redisUrl };
    const runs = new Queue(RUNS_QUEUE, { connection, prefix: f.prefix });
    const segments = new Queue(SEGMENTS_QUEUE, { connection, prefix: f.prefix });
    try {
      // As any producer could write them to Redis: locations that are none, a field missing.
      const request = { input: '/nowhere/in.csv', model: 'p/m', out: 's3://', options: {} };
      await runs.add('run', { runId: 'bad-out', request }, { jobId: 'bad-out', attempts: 5 });
      await segments.add('segment', { runId: 'r', folder: 'ftp://host/runs/r', index: 0, generation: 1 }, { jobId: 'bad-folder', attempts: 5 });
      await segments.add('segment', { runId: 'r', folder: '/runs/r', generation: 1 }, { jobId: 'no-index', attempts: 5 });
      for (const [q, id, field] of [
        [runs, 'bad-out', /request\.out: location 's3:\/\/' has no valid bucket name/],
        [segments, 'bad-folder', /folder: location 'ftp:\/\/host\/runs\/r' has an unsupported scheme/],
        [segments, 'no-index', /index: must be a number/],
      ] as const) {
        const failed = await waitFor(
          `${id} to fail`,
          // State first, then the job: a job read before its move to failed lacks failedReason.
          async () => ((await q.getJobState(id)) === 'failed' ? Job.fromId(q, id) : undefined),
          30_000,
        );
        expect(failed.failedReason, id).toMatch(new RegExp(`^job ${id} of queue \\S+: its data cannot be read \\(.*\\) \\[E_USAGE\\]$`));
        expect(failed.failedReason, id).toMatch(field);
        // Not retriable: failed at the first attempt, not five.
        expect(failed.attemptsMade, id).toBeLessThanOrEqual(1);
      }
      expect(worker.child.exitCode).toBe(null);
      expect(worker.log()).toMatch(/job failed/);
    } finally {
      await runs.close();
      await segments.close();
    }
  });
});
