import { describe, expect, it } from 'vitest';
import { progressFromHash } from '../../src/queue/run-progress.js';

/** A run of 1000 rows in 2 segments, started at t = 1 s; both segments done, 3 rows quarantined. */
const finishedHash = { startedAt: '1000', rowsTotal: '1000', segmentsTotal: '2', r0: '500', q0: '3', d0: '1', r1: '500', q1: '0', d1: '1' };

describe('progressFromHash', () => {
  it('a finished run: the rate is over its own time, the same however late it is asked', () => {
    const at = (now: number) => progressFromHash(finishedHash, now, 11_000);
    expect(at(11_000)).toEqual({ rowsDone: 1000, rowsTotal: 1000, rowsQuarantined: 3, segmentsDone: 2, segmentsTotal: 2, rowsPerSecond: 100, etaSeconds: 0 });
    expect(at(11_500)).toEqual(at(11_000));
    expect(at(7 * 24 * 3600 * 1000)).toEqual(at(11_000));
  });

  it('a running run: the rate and ETA are up to now', () => {
    const running = { startedAt: '1000', rowsTotal: '1000', segmentsTotal: '2', r0: '500', q0: '0', d0: '1', r1: '250', q1: '0' };
    expect(progressFromHash(running, 6_000)).toMatchObject({ rowsDone: 750, segmentsDone: 1, rowsPerSecond: 150, etaSeconds: 2 });
    expect(progressFromHash(running, 11_000)).toMatchObject({ rowsDone: 750, rowsPerSecond: 75, etaSeconds: 4 });
  });

  it('a failed run with rows left keeps its rate and has no ETA', () => {
    const failed = { startedAt: '1000', rowsTotal: '1000', segmentsTotal: '2', r0: '500', q0: '0', d0: '1', r1: '100', q1: '0' };
    const p = progressFromHash(failed, 60_000, 7_000);
    expect(p).toMatchObject({ rowsDone: 600, rowsPerSecond: 100, etaSeconds: null });
    expect(progressFromHash(failed, 120_000, 7_000)).toEqual(p);
  });

  it('a run not planned yet has no progress', () => {
    expect(progressFromHash({}, 1_000)).toBeUndefined();
  });
});
