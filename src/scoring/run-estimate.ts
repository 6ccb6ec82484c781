import { AUTO_SLOTS } from '../service/index.js';

/** A figure as a range: `low <= expected <= high`. */
export interface Range {
  low: number;
  expected: number;
  high: number;
}

/** What a dry run measured, and the run's plan, that a run's estimate is worked out from. */
export interface EstimateInput {
  /** The plan's segments, their first row's index and their rows: a batch never spans two. */
  segments: readonly { firstRow: number; rows: number }[];
  /**
   * Each row sent carries its index as its row id (the member the server echoes): the digits of
   * the indexes grow along the input, so they are counted for the run's rows, not taken from the
   * canary's first ones (a run of 20,000 rows sends about 1.5 bytes a row more than its canary).
   */
  rowIds: boolean;
  /** --batch-size and --max-batch-bytes. */
  limits: { batchSize: number; maxBatchBytes: number };
  /**
   * The canary batches as sent: their rows and the bytes of the rows' JSON (as --max-batch-bytes
   * counts them), less the digits of their row ids with `rowIds` (see rowIdDigits).
   */
  batches: readonly { rows: number; bytes: number }[];
  /** Bytes a request body has around its rows' JSON (the envelope, and the params in it). */
  envelopeBytes: number;
  /** Time each canary request after the first wave held its slot, in ms, at the concurrency the canary was sent at. */
  latenciesMs: readonly number[];
  /** Time taken before the first request could be sent (describe, planning, the probe), in ms: measured once. */
  fixedMs: number;
  /**
   * Time the canary's first wave took, in ms: its requests open the connections and run code not
   * yet compiled at either end, as the run's first wave does, so it is a cost the run pays once.
   */
  warmUpMs: number;
  /** The run's --concurrency. */
  concurrency: number | 'auto';
}

/** A run's estimate, each figure a range, and the latencies it rests on. */
export interface RunEstimate {
  requests: Range;
  rows: Range;
  bytesSent: Range;
  durationMs: Range;
  /** The canary's latencies (ms): the nearest-rank percentiles, and the range a request is assumed to take. */
  latencyMs: { samples: number; min: number; p50: number; p90: number; max: number; assumed: Range };
  /** The requests in flight assumed: the --concurrency asked, or the level `auto` climbs to for this run. */
  concurrency: number;
}

/**
 * Works out a run's requests, bytes sent and duration from a few canary batches, each as a range.
 *
 * - Rows per request follow bytes per row: --max-batch-bytes cuts a batch before --batch-size when
 *   rows are large, once the next row does not fit (see rowsPerRequest). Bytes per row are the
 *   canary's: low and high are the smallest and largest of its batches' averages, so the range is
 *   as wide as the rows seen vary (the rest of the input is assumed to look like its first rows).
 *   Row ids are not: their digits are counted for the run's own rows.
 * - A request is expected to take the canary's median, and at best and at worst its fastest and
 *   slowest, widened by max(spread, median / 4) / sqrt(samples): a few samples bound the latency
 *   loosely, and the quarter of the median keeps a range around latencies that came out alike.
 *   The median rather than the mean: the first requests of a process are slowed by its start
 *   (connections opened, code compiled), and a mean of a few samples would carry that into every
 *   wave of the run.
 * - Requests go in waves of the concurrency: duration = fixed costs + the first wave as the
 *   canary's took + the other waves x latency. `auto` is assumed to climb from AUTO_SLOTS.initial
 *   by a slot per round trip to AUTO_SLOTS.max (a service that never refuses), so its waves grow
 *   as it does.
 * - The fixed costs and the first wave were measured once: they are taken at half to twice their time.
 *
 * Retries are not counted: a service that refuses or fails requests takes longer than `high`.
 */
export function estimateRun(input: EstimateInput): RunEstimate {
  const rows = input.segments.reduce((n, s) => n + s.rows, 0);
  const idDigits = input.segments.map((s) => (input.rowIds ? rowIdDigits(s.firstRow, s.rows) : 0));
  const idsPerRow = rows > 0 ? idDigits.reduce((n, d) => n + d, 0) / rows : 0;
  const bytesPerRow = canaryBytesPerRow(input.batches);
  // More bytes a row, fewer rows a request: the low byte count gives the low request count. A
  // segment's rows carry its own ids' digits, on average.
  const requestsAt = (b: number, packing: Packing) =>
    input.segments.reduce((n, s, i) => n + requestCount([s.rows], rowsPerRequest(b + (s.rows > 0 ? idDigits[i] / s.rows : 0), input.limits, packing)), 0);
  const requests = {
    low: requestsAt(bytesPerRow.low, 'tight'),
    expected: requestsAt(bytesPerRow.expected, 'average'),
    high: requestsAt(bytesPerRow.high, 'loose'),
  };
  const bytesSent = {
    low: bodyBytes(rows, requests.low, bytesPerRow.low + idsPerRow, input.envelopeBytes),
    expected: bodyBytes(rows, requests.expected, bytesPerRow.expected + idsPerRow, input.envelopeBytes),
    high: bodyBytes(rows, requests.high, bytesPerRow.high + idsPerRow, input.envelopeBytes),
  };
  const latency = latencyRange(input.latenciesMs);
  // Measured once: the time before the first request, and the first wave's.
  const once = (n: number) => input.fixedMs + (n > 0 ? input.warmUpMs : 0);
  const after = (n: number) => Math.max(0, requestWaves(n, input.concurrency) - 1);
  const durationMs = {
    low: Math.floor(once(requests.low) / 2 + after(requests.low) * latency.assumed.low),
    expected: Math.round(once(requests.expected) + after(requests.expected) * latency.assumed.expected),
    high: Math.ceil(once(requests.high) * 2 + after(requests.high) * latency.assumed.high),
  };
  return {
    requests,
    rows: { low: rows, expected: rows, high: rows },
    bytesSent,
    durationMs,
    latencyMs: latency,
    concurrency: concurrencyReached(requests.expected, input.concurrency),
  };
}

/** Bytes per row of the canary's rows' JSON: its smallest batch average, the whole canary's, its largest. */
export function canaryBytesPerRow(batches: readonly { rows: number; bytes: number }[]): Range {
  const full = batches.filter((b) => b.rows > 0);
  if (full.length === 0) return { low: 0, expected: 0, high: 0 };
  const averages = full.map((b) => b.bytes / b.rows);
  const total = full.reduce((t, b) => ({ rows: t.rows + b.rows, bytes: t.bytes + b.bytes }), { rows: 0, bytes: 0 });
  return { low: Math.min(...averages), expected: total.bytes / total.rows, high: Math.max(...averages) };
}

/**
 * How full a batch cut by --max-batch-bytes is: it ends once the next row does not fit, so the room
 * it leaves is under a row. `tight` leaves none (the fewest requests), `average` half a row (what
 * rows of varying sizes leave on average), `loose` a whole row (the most requests).
 */
export type Packing = 'tight' | 'average' | 'loose';

/**
 * Rows a request holds at `bytesPerRow` on average (not always a whole number): --batch-size, or
 * fewer when --max-batch-bytes cuts first, packed as `packing` says; never fewer than one.
 */
export function rowsPerRequest(bytesPerRow: number, limits: { batchSize: number; maxBatchBytes: number }, packing: Packing = 'tight'): number {
  if (bytesPerRow <= 0) return limits.batchSize;
  const fit = limits.maxBatchBytes / bytesPerRow;
  // A batch holds whole rows: never more than fit in it, even on average.
  const rows = { tight: Math.floor(fit), average: Math.min(Math.floor(fit), fit - 0.5), loose: Math.floor(fit) - 1 }[packing];
  return Math.max(1, Math.min(limits.batchSize, rows));
}

/** Decimal digits of the row indexes `first` to `first + count` (exclusive), as row ids are written: 1 for 0-9, 2 for 10-99... */
export function rowIdDigits(first: number, count: number): number {
  const end = first + count;
  let total = 0;
  for (let digits = 1, low = 0, high = 10; low < end; digits++, low = high, high *= 10) {
    const span = Math.min(end, high) - Math.max(first, low);
    if (span > 0) total += span * digits;
  }
  return total;
}

/** Predict requests for segments of these rows at `perRequest` rows each: a segment's last batch may be short. */
export function requestCount(segmentRows: readonly number[], perRequest: number): number {
  return segmentRows.reduce((n, rows) => n + Math.ceil(rows / perRequest), 0);
}

/** Body bytes of `requests` requests holding `rows` rows: each row's JSON and its comma, less one comma a request, plus the envelope. */
function bodyBytes(rows: number, requests: number, bytesPerRow: number, envelopeBytes: number): number {
  return requests === 0 ? 0 : Math.round(rows * (bytesPerRow + 1) + requests * (envelopeBytes - 1));
}

/**
 * The canary's latencies, and the range one request is assumed to take: the fastest and slowest
 * seen, widened by max(spread, median / 4) / sqrt(samples); the median expected. None seen: zero.
 */
export function latencyRange(samples: readonly number[]): RunEstimate['latencyMs'] {
  const n = samples.length;
  if (n === 0) return { samples: 0, min: 0, p50: 0, p90: 0, max: 0, assumed: { low: 0, expected: 0, high: 0 } };
  const sorted = [...samples].sort((a, b) => a - b);
  const [min, max] = [sorted[0], sorted[n - 1]];
  const median = percentile(sorted, 0.5);
  const margin = Math.max(max - min, median / 4) / Math.sqrt(n);
  return {
    samples: n,
    min: round1(min),
    p50: round1(median),
    p90: round1(percentile(sorted, 0.9)),
    max: round1(max),
    assumed: { low: round1(Math.max(0, min - margin)), expected: round1(median), high: round1(max + margin) },
  };
}

/** The nearest-rank percentile `q` (0..1] of sorted values. */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
}

/**
 * Round trips `requests` requests take at this concurrency: ceil(requests / N) for a fixed N; for
 * `auto`, one round at each level from AUTO_SLOTS.initial up, a slot more each round (it adds one
 * after as many answers as it has slots), then rounds at AUTO_SLOTS.max.
 */
export function requestWaves(requests: number, concurrency: number | 'auto'): number {
  if (concurrency !== 'auto') return Math.ceil(requests / concurrency);
  let [left, level, waves] = [requests, Math.min(AUTO_SLOTS.initial, AUTO_SLOTS.max), 0];
  while (left > 0 && level < AUTO_SLOTS.max) {
    left -= level;
    waves++;
    level++;
  }
  return waves + Math.ceil(Math.max(0, left) / AUTO_SLOTS.max);
}

/** The requests in flight the run reaches: N, or the level `auto` has climbed to by its last round. */
export function concurrencyReached(requests: number, concurrency: number | 'auto'): number {
  if (concurrency !== 'auto') return concurrency;
  let [left, level] = [requests - AUTO_SLOTS.initial, Math.min(AUTO_SLOTS.initial, AUTO_SLOTS.max)];
  while (left > 0 && level < AUTO_SLOTS.max) left -= ++level;
  return level;
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}
