import { formatLimit, LIMITS } from '../config/limits.js';
import { BatchScorerError } from '../errors.js';

/**
 * The segments a text input's files make at `segmentRows`: planning starts a segment every
 * `segmentRows` rows of each file, from its first (see planInput), so a file of `rows` rows makes
 * ceil(rows / segmentRows) of them. A Parquet file makes at most as many (its row groups are never
 * split, so a segment may hold more rows).
 */
export function segmentsOf(fileRows: readonly number[], segmentRows: number): number {
  return fileRows.reduce((n, rows) => n + Math.ceil(rows / segmentRows), 0);
}

/**
 * The smallest `segmentRows` at which files of these rows make at most `maxSegments` segments;
 * undefined when none does (more files with rows than `maxSegments`: each makes one at least).
 */
export function minimumSegmentRows(fileRows: readonly number[], maxSegments: number): number | undefined {
  if (fileRows.filter((rows) => rows > 0).length > maxSegments) return undefined;
  // segmentsOf only falls as segmentRows grows: the first that fits, by bisection.
  let low = Math.max(1, Math.ceil(fileRows.reduce((n, rows) => n + rows, 0) / maxSegments));
  let high = Math.max(low, ...fileRows);
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (segmentsOf(fileRows, mid) <= maxSegments) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * Planning's refusal of an input that makes more than `maxSegments` segments, found by row
 * `rowsSoFar` (1-based, in the whole input): planning stops there, so the smallest `segmentRows`
 * that fits is known only to be more than rowsSoFar / maxSegments.
 */
export function tooManySegments(name: string, options: { segmentRows: number; maxSegments?: number }, rowsSoFar: number): BatchScorerError {
  const max = options.maxSegments ?? LIMITS.segments.default;
  const atLeast = Math.ceil(rowsSoFar / max);
  return segmentsRefused(
    `${name}: its first ${rowsSoFar.toLocaleString('en-US')} rows already make more than ${formatLimit('segments', max)} segments of --segment-rows ${options.segmentRows}`,
    max,
    `at least ${atLeast.toLocaleString('en-US')} (more if the input has many more rows)`,
  );
}

/** The refusal of an input whose rows are counted: `fileRows` make more than `maxSegments` segments at `segmentRows`. */
export function segmentsPastBound(name: string, fileRows: readonly number[], segmentRows: number, maxSegments: number): BatchScorerError {
  const minimum = minimumSegmentRows(fileRows, maxSegments);
  const rows = fileRows.reduce((n, r) => n + r, 0).toLocaleString('en-US');
  return segmentsRefused(
    `${name}: its ${rows} rows make ${segmentsOf(fileRows, segmentRows).toLocaleString('en-US')} segments of --segment-rows ${segmentRows}`,
    maxSegments,
    minimum === undefined ? undefined : `${minimum.toLocaleString('en-US')} or more`,
  );
}

/** E_LIMIT naming MAX_SEGMENTS and the `segmentRows` that would fit (`fits`), or that none does. */
function segmentsRefused(what: string, maxSegments: number, fits: string | undefined): BatchScorerError {
  const { setting } = LIMITS.segments;
  const remedy =
    fits === undefined
      ? `it has more files with rows than that, and each makes one segment at least: split the run, or raise ${setting}`
      : `choose a --segment-rows (segmentRows) of ${fits}, or raise ${setting}`;
  return new BatchScorerError('E_LIMIT', `${what}, past ${setting} (${formatLimit('segments', maxSegments)}): ${remedy}`);
}
