import { describe, expect, it } from 'vitest';
import { formatFailedAttempt, shownLogs } from '../../src/cli/job-log-lines.js';
import { failedAttemptLine, readFailedAttempt, type FailedAttempt } from '../../src/queue/failed-attempt.js';
import { VALUE_BYTES } from '../../src/text-excerpt.js';

const attempt: FailedAttempt = {
  attempt: 2,
  attempts: 5,
  code: 'E_SERVICE_UNAVAILABLE',
  reason: 'the service answered 503',
  retryAt: '2026-12-01T18:00:10.000Z',
};

describe('failed attempts in a run job log', () => {
  it('reads back what the worker writes, its reason made one bounded line', () => {
    expect(readFailedAttempt(failedAttemptLine(attempt))).toEqual(attempt);
    const long = readFailedAttempt(failedAttemptLine({ ...attempt, reason: `first\n  second\r\n${'x'.repeat(5000)}` }))!;
    expect(long.reason).toMatch(/^first second x+\.\.\. \d+ more bytes$/);
    expect(Buffer.byteLength(long.reason)).toBeLessThanOrEqual(VALUE_BYTES);
  });

  it('takes no other line for one: milestones, and lines whose JSON is not an attempt', () => {
    for (const line of [
      'planned: 10 rows in 1 segments',
      'attempt failed: {',
      'attempt failed: {"attempt":0}',
      `attempt failed: ${JSON.stringify({ ...attempt, code: 5 })}`,
    ]) {
      expect(readFailedAttempt(line)).toBeUndefined();
    }
  });

  it('says when the next try comes, or that it was the last', () => {
    const now = Date.parse('2026-12-01T18:00:05Z');
    expect(formatFailedAttempt('r', attempt, now)).toBe(
      'run r: attempt 2 of 5 failed: the service answered 503 [E_SERVICE_UNAVAILABLE]; next try in 5 s (at 2026-12-01T18:00:10Z)',
    );
    // Read after the time (status --logs, later): when, without a wait that has passed.
    expect(formatFailedAttempt('r', attempt, now + 60_000)).toMatch(/; next try at 2026-12-01T18:00:10Z$/);
    expect(formatFailedAttempt('r', { ...attempt, attempt: 5, retryAt: null }, now)).toMatch(/ \[E_SERVICE_UNAVAILABLE\]; it was the last$/);
  });

  it('shows attempts always, milestones when asked, as text or JSON lines', () => {
    const logs = ['planned: 10 rows in 1 segments', failedAttemptLine(attempt)];
    expect(shownLogs('r', logs, { json: false, milestones: false })).toEqual([expect.stringMatching(/^run r: attempt 2 of 5 failed: /)]);
    expect(shownLogs('r', logs, { json: true, milestones: true }).map((l) => JSON.parse(l) as unknown)).toEqual([
      { runId: 'r', log: logs[0] },
      { runId: 'r', failedAttempt: attempt },
    ]);
  });
});
