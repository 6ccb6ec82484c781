import { describe, expect, it } from 'vitest';
import { deadlineTime } from '../../src/config/deadline.js';
import { parseRunOptions } from '../../src/config/run-options.js';
import { UsageError } from '../../src/errors.js';
import { capLimits, ExpiredError, MemoryRunCaps, runExpired } from '../../src/scoring/run-caps.js';
import { withNeutralOptions, type RunRequest } from '../../src/scoring/run-request.js';
import { rejection, thrown } from '../helpers/rejection.js';

const START = Date.parse('2026-11-26T01:00:00Z');

describe('--deadline', () => {
  it('takes a duration from the run start, or an ISO 8601 time with its offset, as the absolute time it means', () => {
    expect(deadlineTime('90s', START)).toBe('2026-11-26T01:01:30.000Z');
    expect(deadlineTime('30m', START)).toBe('2026-11-26T01:30:00.000Z');
    expect(deadlineTime('2h', START)).toBe('2026-11-26T03:00:00.000Z');
    expect(deadlineTime('2026-11-26T06:00:00Z', START)).toBe('2026-11-26T06:00:00.000Z');
    expect(deadlineTime('2026-11-26T07:00:00+01:00', START)).toBe('2026-11-26T06:00:00.000Z');
    expect(deadlineTime('2026-11-26T06:00Z', START)).toBe('2026-11-26T06:00:00.000Z');
  });

  it('refuses anything else', () => {
    for (const bad of ['', '90', '1.5h', '2d', '-5m', 'soon', '2026-11-26', '2026-11-26T06:00:00', '2026-13-40T06:00:00Z', ' 90s']) {
      expect(deadlineTime(bad, START), bad).toBeUndefined();
    }
  });

  it('is stored as a time once parsed, which parsing again keeps', () => {
    const before = Date.now();
    const { deadline } = parseRunOptions({ deadline: '90s' });
    const at = Date.parse(deadline!);
    expect(at - before).toBeGreaterThanOrEqual(90_000);
    expect(at - Date.now()).toBeLessThanOrEqual(90_000);
    expect(parseRunOptions({ deadline }).deadline).toBe(deadline);
  });

  it('names the flag, or the field, of a bad value', () => {
    expect(thrown(() => parseRunOptions({ deadline: 'tomorrow' }, 'score', 'flags'), UsageError).message).toBe(
      'score: --deadline: must be a duration such as 90s, 30m or 2h, or an ISO 8601 time with its offset such as 2026-11-26T06:00:00Z',
    );
    expect(thrown(() => parseRunOptions({ maxRequests: 0, maxRows: 1.5 }, 'score', 'flags'), UsageError).message).toBe(
      'score: --max-requests: must be at least 1; --max-rows: must be a whole number',
    );
    expect(thrown(() => parseRunOptions({ deadline: 5 }), UsageError).message).toBe('run options: deadline: must be text');
  });
});

describe('caps on a resume', () => {
  const stored: RunRequest = {
    input: '/in.csv',
    model: 'p/m',
    out: '/out',
    options: parseRunOptions({ maxRequests: 50, maxRows: 10, deadline: '2026-11-26T06:00:00Z', maxErrorRate: 0.1 }),
  };

  it("are the resume's own: the caps it names replace the run's, and a resume naming none is uncapped", () => {
    const higher = withNeutralOptions(stored, parseRunOptions({ maxRequests: 100 }));
    expect(higher.options).toMatchObject({ maxRequests: 100, maxErrorRate: 0.01 });
    expect(higher.options.maxRows).toBeUndefined();
    expect(higher.options.deadline).toBeUndefined();
    expect('deadline' in withNeutralOptions(stored, {}).options).toBe(false);
    // Other output-neutral options left out keep the run's.
    expect(withNeutralOptions(stored, {}).options.maxErrorRate).toBe(0.1);
  });
});

describe("a run's caps in one process", () => {
  it('takes attempts up to --max-requests, counted on from what earlier attempts used, then refuses every take', async () => {
    const caps = new MemoryRunCaps({ maxRequests: 5 }, { requests: 3, rows: 100 });
    await caps.takeAttempt(10);
    await caps.takeAttempt(10);
    expect(caps.usage).toEqual({ requests: 5, rows: 120 });
    expect(caps.expired).toBeUndefined();
    const refused = await rejection(caps.takeAttempt(10), ExpiredError);
    expect(refused).toMatchObject({ code: 'E_EXPIRED', kind: 'max-requests', message: '--max-requests reached: no more predict calls are sent' });
    expect(caps.expired).toBe('max-requests');
    // Expired, the run sends nothing more, and nothing is counted.
    expect((await rejection(caps.takeAttempt(1), ExpiredError)).kind).toBe('max-requests');
    expect(caps.usage).toEqual({ requests: 5, rows: 120 });
  });

  it('takes each attempt with its rows, retries too; refuses one that would go past --max-rows, and every one after it', async () => {
    const caps = new MemoryRunCaps({ maxRows: 250 });
    await caps.takeAttempt(100);
    // The same batch again (a retry) is rows sent again.
    await caps.takeAttempt(100);
    expect((await rejection(caps.takeAttempt(100), ExpiredError)).kind).toBe('max-rows');
    // Nor a smaller one, nor a retry of one given rows before: the run has expired.
    expect((await rejection(caps.takeAttempt(1), ExpiredError)).kind).toBe('max-rows');
    expect(caps.usage).toEqual({ requests: 2, rows: 200 });
  });

  it('takes an attempt whole or not at all: refused by one cap, it counts against neither', async () => {
    const rows = new MemoryRunCaps({ maxRequests: 10, maxRows: 50 });
    await rejection(rows.takeAttempt(51), ExpiredError);
    expect(rows.usage).toEqual({ requests: 0, rows: 0 });
    const requests = new MemoryRunCaps({ maxRequests: 1, maxRows: 50 });
    await requests.takeAttempt(10);
    expect((await rejection(requests.takeAttempt(10), ExpiredError)).kind).toBe('max-requests');
    expect(requests.usage).toEqual({ requests: 1, rows: 10 });
  });

  it('refuses every take from the deadline on', async () => {
    let now = START;
    const caps = new MemoryRunCaps(capLimits(parseRunOptions({ deadline: '2026-11-26T01:00:10Z' })), undefined, () => now);
    await caps.takeAttempt(1);
    now += 9_999;
    await caps.takeAttempt(10);
    now += 1;
    expect((await rejection(caps.takeAttempt(1), ExpiredError)).kind).toBe('deadline');
    expect(caps.usage).toEqual({ requests: 2, rows: 11 });
  });

  it('counts without refusing when uncapped', async () => {
    const caps = new MemoryRunCaps(capLimits(parseRunOptions({})));
    for (let i = 0; i < 1000; i++) await caps.takeAttempt(100);
    expect(caps.usage).toEqual({ requests: 1000, rows: 100_000 });
    expect(caps.expired).toBeUndefined();
  });

  it("words the run's error with the flag, how far it got and how to go on", () => {
    const err = runExpired('r1', {
      kind: 'max-requests',
      limit: 50,
      reached: { requests: 50, rowsSent: 5000, rowsScored: 4000, rowsTotal: 20_000, segmentsDone: 2, segmentsTotal: 10 },
    });
    expect(err.message).toBe(
      'run r1 expired: --max-requests 50 reached after 50 predict calls; 4,000 of 20,000 rows scored and kept, 2 of 10 segments finished; resume it with a higher --max-requests (or none)',
    );
    expect(err.exitCode).toBe(1);
    expect(err.retriable).toBe(false);
  });
});
