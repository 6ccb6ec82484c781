import { describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from '../../src/database/index.js';
import { BatchScorerError } from '../../src/errors.js';
import { policedRuns } from '../../src/http/policed-runs.js';
import type { RunQueueCalls } from '../../src/queue/producer.js';
import { rejection } from '../helpers/rejection.js';

// The policy wrapper is the thing under test; the run queue beneath it only records what reaches it.
describe('policedRuns', () => {
  it('passes a resume its caps: POST /runs/:id/resume with maxRequests resumes under them', async () => {
    const resumed: unknown[][] = [];
    const queue = {
      get: (runId: string) => Promise.resolve({ runId, input: '/data/in.csv', out: '/data/out', model: 'p/m' }),
      resume: (...args: unknown[]) => {
        resumed.push(args);
        return Promise.resolve({ runId: args[0] as string, resumed: true as const });
      },
    } as unknown as RunQueueCalls;
    const runs = policedRuns(queue, { inputRoots: undefined, outputRoots: undefined });
    await runs.resume('r', { maxRequests: 70, deadline: '30m' });
    expect(resumed).toEqual([['r', { maxRequests: 70, deadline: '30m' }]]);
  });

  it('refuses a run writing into a database OUTPUT_ROOTS does not list, before it reaches the queue', async () => {
    const enqueued: unknown[] = [];
    const queue = { enqueue: (submission: unknown) => (enqueued.push(submission), Promise.resolve({ runId: 'r', created: true })) } as unknown as RunQueueCalls;
    const runs = policedRuns(queue, { outputDatabases: [parseDatabaseUrl('postgresql://db:5432/allowed')] });
    const submission = (db: string) => ({ input: '/data/in.csv', out: '/data/out', model: 'p/m', options: { outTable: 's.t', outDatabase: db } });
    const err = await rejection(runs.enqueue(submission('postgresql://db:5432/other')), BatchScorerError);
    expect(err.code).toBe('E_NOT_ALLOWED');
    expect(err.message).toMatch(/^--out-database postgresql:\/\/db:5432\/other is not allowed/);
    expect(enqueued).toEqual([]);
    await runs.enqueue(submission('postgresql://reader@db:5432/allowed'));
    expect(enqueued).toHaveLength(1);
  });
});
