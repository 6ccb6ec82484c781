import { describe, expect, it } from 'vitest';
import { formatRunStatus } from '../../src/cli/run-status-view.js';
import type { RunStatus } from '../../src/queue/producer.js';

const run: RunStatus = {
  runId: 'r1',
  state: 'queued',
  attempts: 0,
  folder: '/out/r1',
  input: '/in.csv',
  model: 'p/m',
  out: '/out',
  options: {},
  priority: 'normal',
  enqueuedAt: '2026-11-26T01:00:00.000Z',
};

describe('formatRunStatus', () => {
  it("says a run's priority unless it is normal", () => {
    expect(formatRunStatus({ ...run, priority: 'high' })).toBe('r1  queued  -  priority high  attempts 0  by unknown  /out/r1');
    expect(formatRunStatus(run)).toBe('r1  queued  -  attempts 0  by unknown  /out/r1');
  });
});
