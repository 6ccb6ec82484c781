import { describe, expect, it } from 'vitest';
import { policedRuns } from '../../src/http/policed-runs.js';
import type { RunQueueCalls } from '../../src/queue/producer.js';

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
});
