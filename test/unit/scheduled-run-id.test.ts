import { describe, expect, it } from 'vitest';
import { runOptionsSchema } from '../../src/config/run-options.js';
import { fillDateTemplate } from '../../src/triggers/date-template.js';
import { scheduledRunId } from '../../src/triggers/scheduled-run-id.js';
import { zonedIso } from '../../src/triggers/zoned-time.js';

describe('scheduled run ids', () => {
  it('are the pipeline and the fire time in UTC, to the minute, or to the second when it has seconds', () => {
    expect(scheduledRunId('nightly-rentals', new Date('2026-11-23T01:00:00Z'))).toBe('nightly-rentals-20261123T0100Z');
    expect(scheduledRunId('fast', new Date('2026-11-23T01:00:02Z'))).toBe('fast-20261123T010002Z');
    // Two firings of a 6-field cron in one minute: never one id.
    const minute = [0, 2, 4, 58].map((s) => scheduledRunId('fast', new Date(Date.UTC(2026, 10, 23, 1, 0, s))));
    expect(new Set(minute).size).toBe(4);
  });

  it('tell apart the two 02:30s of the night clocks go back in Paris', () => {
    // 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:30 on the wall clock happens twice.
    const first = new Date('2026-10-25T00:30:00Z');
    const second = new Date('2026-10-25T01:30:00Z');
    expect([zonedIso(first, 'Europe/Paris'), zonedIso(second, 'Europe/Paris')]).toEqual(['2026-10-25T02:30:00+02:00', '2026-10-25T02:30:00+01:00']);
    expect(scheduledRunId('p', first)).toBe('p-20261025T0030Z');
    expect(scheduledRunId('p', second)).toBe('p-20261025T0130Z');
  });

  it('are valid run ids for the longest pipeline name', () => {
    const id = scheduledRunId('a'.repeat(64), new Date('2026-11-23T01:00:02Z'));
    expect(runOptionsSchema.safeParse({ runId: id }).success).toBe(true);
  });
});

describe('zonedIso', () => {
  it.each([
    ['UTC', '2026-11-24T01:00:00+00:00'],
    ['Europe/Paris', '2026-11-24T02:00:00+01:00'],
    ['Asia/Kolkata', '2026-11-24T06:30:00+05:30'],
    ['America/St_Johns', '2026-11-23T21:30:00-03:30'],
    ['Pacific/Kiritimati', '2026-11-24T15:00:00+14:00'],
  ])('shows 2026-11-24T01:00Z on the clock of %s with its offset', (tz, expected) => {
    const at = new Date('2026-11-24T01:00:00Z');
    expect(zonedIso(at, tz)).toBe(expected);
    expect(Date.parse(expected)).toBe(at.getTime());
  });
});

describe('a fired input template', () => {
  it("is filled with the fire time's day in the schedule's zone, not UTC's", () => {
    // 23:30 UTC on the 23rd is already the 24th in Tokyo, and still the 23rd in New York.
    const fired = new Date('2026-11-23T23:30:00Z');
    expect(fillDateTemplate('s3://in/{date}.csv', fired, 'Asia/Tokyo')).toBe('s3://in/2026-11-24.csv');
    expect(fillDateTemplate('s3://in/{date}.csv', fired, 'America/New_York')).toBe('s3://in/2026-11-23.csv');
    expect(fillDateTemplate('s3://in/{date-1d}/{date}.csv', fired, 'Asia/Tokyo')).toBe('s3://in/2026-11-23/2026-11-24.csv');
  });
});
