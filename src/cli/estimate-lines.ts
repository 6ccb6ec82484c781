import type { DryRunReport } from '../scoring/index.js';

/** A dry run's estimate for people: each figure expected (low to high), then what the range rests on. */
export function estimateLines(e: DryRunReport['estimate']): string[] {
  const { basis: b } = e;
  const lat = b.latencyMs;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const range = (r: { low: number; expected: number; high: number }, unit: (v: number) => string = String) =>
    `${unit(r.expected)} (low ${unit(r.low)}, high ${unit(r.high)})`;
  return [
    `requests: ${range(e.requests)}`,
    `rows: ${e.rows.expected}`,
    `bytes sent: ${range(e.bytesSent)}`,
    `estimated duration: ${range(e.durationMs, seconds)} at concurrency ${b.concurrency}`,
    `estimate rests on: ${b.canaryBatches} canary batches (${b.canaryRows} rows) sent ${b.canaryConcurrency} at a time; ` +
      `latency after the first wave p50 ${lat.p50} ms, p90 ${lat.p90} ms (${lat.samples} samples, ${lat.min} to ${lat.max} ms), ` +
      `taken as ${lat.assumed.low} to ${lat.assumed.high} ms a request; ${b.fixedMs} ms before the first request, ${b.warmUpMs} ms for the first wave`,
    ...b.assumptions.map((a) => `assumes: ${a}`),
  ];
}
