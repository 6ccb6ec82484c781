import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AUTO_SLOTS } from '../../src/service/request-slots.js';
import {
  canaryBytesPerRow,
  concurrencyReached,
  estimateRun,
  latencyRange,
  percentile,
  requestCount,
  requestWaves,
  rowIdDigits,
  rowsPerRequest,
  type EstimateInput,
  type Range,
} from '../../src/scoring/run-estimate.js';

const LIMITS = { batchSize: 100, maxBatchBytes: 1_000_000 };

function input(over: Partial<EstimateInput> = {}): EstimateInput {
  return {
    segments: [
      { firstRow: 0, rows: 250 },
      { firstRow: 250, rows: 250 },
    ],
    rowIds: false,
    limits: LIMITS,
    batches: [
      { rows: 100, bytes: 10_000 },
      { rows: 100, bytes: 12_000 },
    ],
    envelopeBytes: 11,
    latenciesMs: [40, 50, 60, 50],
    fixedMs: 100,
    warmUpMs: 80,
    concurrency: 4,
    ...over,
  };
}

const ordered = (r: Range) => r.low <= r.expected && r.expected <= r.high;

describe('estimateRun', () => {
  it('works out each figure from the plan and the canary', () => {
    const e = estimateRun(input());
    // Full batches by count: ceil(250 / 100) per segment, whatever the bytes.
    expect(e.requests).toEqual({ low: 6, expected: 6, high: 6 });
    expect(e.rows).toEqual({ low: 500, expected: 500, high: 500 });
    // 500 rows x (bytes per row + a comma) + 6 requests x (envelope - one comma): 100, 110, 120 bytes a row.
    expect(e.bytesSent).toEqual({ low: 500 * 101 + 6 * 10, expected: 500 * 111 + 6 * 10, high: 500 * 121 + 6 * 10 });
    // Latency: median 50, margin max(60 - 40, 50 / 4) / sqrt(4) = 10, so 30 to 70 ms.
    expect(e.latencyMs).toEqual({ samples: 4, min: 40, p50: 50, p90: 60, max: 60, assumed: { low: 30, expected: 50, high: 70 } });
    // Planning and the first wave (180 ms, taken at half to twice), then 1 more wave of 4 (6 requests).
    expect(e.durationMs).toEqual({ low: 90 + 30, expected: 180 + 50, high: 360 + 70 });
    expect(e.concurrency).toBe(4);
  });

  it('lets --max-batch-bytes cut batches: the spread of bytes per row gives the range of requests', () => {
    // 100 bytes a row fit 10 rows in 1000 bytes at best; 110, 9.09 less the half row a batch leaves on
    // average, 8.59; 120 bytes, 8 less a whole row at worst, 7.
    const e = estimateRun(input({ limits: { batchSize: 100, maxBatchBytes: 1000 } }));
    expect(e.requests).toEqual({ low: 2 * 25, expected: 2 * 30, high: 2 * 36 });
  });

  it('counts the digits of the run’s own row ids, not those of the canary’s first rows', () => {
    // The canary's 100 and 120 bytes a row are without their ids' digits; rows 0-9 carry 1 digit, 10-99 2 and 100-499 3: 1,390 in all.
    const e = estimateRun(input({ rowIds: true }));
    expect(e.bytesSent).toEqual({ low: 500 * 101 + 1_390 + 6 * 10, expected: 500 * 111 + 1_390 + 6 * 10, high: 500 * 121 + 1_390 + 6 * 10 });
    // Rows past 10,000 carry 5 digits: at 1,000 bytes a batch, 9 rows of 105 bytes instead of 10 of 100.
    const late = estimateRun(input({ rowIds: true, segments: [{ firstRow: 10_000, rows: 900 }], limits: { batchSize: 100, maxBatchBytes: 1000 } }));
    expect(late.requests.low).toBe(900 / 9);
  });

  it('answers an empty input with no requests and the fixed costs', () => {
    const e = estimateRun(input({ segments: [], batches: [], latenciesMs: [], warmUpMs: 0 }));
    expect(e.requests).toEqual({ low: 0, expected: 0, high: 0 });
    expect(e.bytesSent).toEqual({ low: 0, expected: 0, high: 0 });
    expect(e.durationMs).toEqual({ low: 50, expected: 100, high: 200 });
  });

  it('keeps low <= expected <= high, and the rows exact, whatever it is given', () => {
    const batch = fc.record({ rows: fc.integer({ min: 1, max: 1000 }), bytes: fc.integer({ min: 1, max: 1_000_000 }) });
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 20 }),
        fc.boolean(),
        fc.record({ batchSize: fc.integer({ min: 1, max: 5000 }), maxBatchBytes: fc.integer({ min: 1024, max: 8_000_000 }) }),
        fc.array(batch, { maxLength: 8 }),
        fc.array(fc.double({ min: 0, max: 60_000, noNaN: true }), { maxLength: 8 }),
        fc.double({ min: 0, max: 60_000, noNaN: true }),
        fc.double({ min: 0, max: 60_000, noNaN: true }),
        fc.oneof(fc.integer({ min: 1, max: 64 }), fc.constant('auto' as const)),
        (segmentRows, rowIds, limits, batches, latenciesMs, fixedMs, warmUpMs, concurrency) => {
          const segments = segmentRows.map((rows, i) => ({ firstRow: segmentRows.slice(0, i).reduce((n, r) => n + r, 0), rows }));
          const e = estimateRun({ segments, rowIds, limits, batches, envelopeBytes: 11, latenciesMs, fixedMs, warmUpMs, concurrency });
          for (const r of [e.requests, e.rows, e.bytesSent, e.durationMs, e.latencyMs.assumed]) expect(ordered(r), JSON.stringify(r)).toBe(true);
          const rows = segmentRows.reduce((n, r) => n + r, 0);
          expect(e.rows).toEqual({ low: rows, expected: rows, high: rows });
          // Never fewer requests than full batches of --batch-size, never more than a row each.
          expect(e.requests.low).toBeGreaterThanOrEqual(requestCount(segmentRows, limits.batchSize));
          expect(e.requests.high).toBeLessThanOrEqual(rows);
          expect(e.durationMs.low).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });
});

describe('the estimate’s parts', () => {
  it('rowsPerRequest: --batch-size, or the rows --max-batch-bytes holds, at least one', () => {
    expect(rowsPerRequest(100, LIMITS)).toBe(100);
    expect(rowsPerRequest(100, { batchSize: 100, maxBatchBytes: 2_550 })).toBe(25);
    expect(rowsPerRequest(5_000, { batchSize: 100, maxBatchBytes: 2_550 })).toBe(1);
    expect(rowsPerRequest(0, LIMITS)).toBe(100);
  });

  it('rowsPerRequest: a batch cut by bytes leaves no room when tight, half a row on average, a whole row when loose', () => {
    const limits = { batchSize: 100, maxBatchBytes: 2_550 };
    expect([rowsPerRequest(100, limits, 'tight'), rowsPerRequest(100, limits, 'average'), rowsPerRequest(100, limits, 'loose')]).toEqual([25, 25, 24]);
    // Whole batches of --batch-size whenever a row more than it fits: no room counts.
    expect([rowsPerRequest(10, limits, 'average'), rowsPerRequest(10, limits, 'loose')]).toEqual([100, 100]);
    expect(rowsPerRequest(2_000, limits, 'loose')).toBe(1);
  });

  it('rowIdDigits: the decimal digits of a range of row indexes', () => {
    expect(rowIdDigits(0, 10)).toBe(10);
    expect(rowIdDigits(0, 11)).toBe(12);
    expect(rowIdDigits(95, 10)).toBe(5 * 2 + 5 * 3);
    expect(rowIdDigits(0, 20_000)).toBe(10 + 90 * 2 + 900 * 3 + 9_000 * 4 + 10_000 * 5);
    expect(rowIdDigits(7, 0)).toBe(0);
    for (const [first, count] of [
      [0, 1],
      [9, 3],
      [998, 5],
      [123_456, 1_000],
    ]) {
      expect(rowIdDigits(first, count)).toBe(Array.from({ length: count }, (_, i) => String(first + i).length).reduce((n, d) => n + d, 0));
    }
  });

  it('requestCount: a batch never spans two segments', () => {
    expect(requestCount([250, 250], 100)).toBe(6);
    expect(requestCount([500], 100)).toBe(5);
    expect(requestCount([], 100)).toBe(0);
  });

  it('canaryBytesPerRow: the smallest and largest batch averages around the whole canary’s', () => {
    expect(
      canaryBytesPerRow([
        { rows: 10, bytes: 1000 },
        { rows: 30, bytes: 6000 },
      ]),
    ).toEqual({ low: 100, expected: 175, high: 200 });
    expect(canaryBytesPerRow([])).toEqual({ low: 0, expected: 0, high: 0 });
  });

  it('latencyRange: the median expected; few samples widen the range; alike samples still get a quarter of the median over sqrt(n)', () => {
    expect(latencyRange([100]).assumed).toEqual({ low: 75, expected: 100, high: 125 });
    expect(latencyRange([100, 100, 100, 100]).assumed).toEqual({ low: 87.5, expected: 100, high: 112.5 });
    // Eight samples of 50 to 90 ms: margin 40 / sqrt(8) = 14.1; the lower median 65.
    expect(latencyRange([50, 60, 70, 80, 90, 55, 65, 75]).assumed).toEqual({ low: 35.9, expected: 65, high: 104.1 });
  });

  it('percentile: nearest rank', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect([percentile(sorted, 0.5), percentile(sorted, 0.9), percentile(sorted, 1)]).toEqual([5, 9, 10]);
    expect(percentile([7], 0.9)).toBe(7);
  });

  it('requestWaves: ceil(requests / N), or auto’s climb a slot a round trip to its ceiling', () => {
    expect(requestWaves(10, 4)).toBe(3);
    expect(requestWaves(0, 4)).toBe(0);
    expect(AUTO_SLOTS).toMatchObject({ initial: 2, max: 16 });
    // 2 + 3 + 4 = 9 requests in three rounds, the tenth in a fourth.
    expect(requestWaves(9, 'auto')).toBe(3);
    expect(requestWaves(10, 'auto')).toBe(4);
    // 2 + 3 + ... + 15 = 119 in 14 rounds, then 16 a round.
    expect(requestWaves(119, 'auto')).toBe(14);
    expect(requestWaves(119 + 160, 'auto')).toBe(24);
    expect([concurrencyReached(1, 'auto'), concurrencyReached(9, 'auto'), concurrencyReached(10, 'auto'), concurrencyReached(10_000, 'auto')]).toEqual([
      2, 4, 5, 16,
    ]);
    expect(concurrencyReached(10, 8)).toBe(8);
  });
});
