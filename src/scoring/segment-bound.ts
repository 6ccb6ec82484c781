import { formatLimit, LIMITS } from '../config/index.js';
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

/** E_LIMIT of an input past MAX_SEGMENTS: a class of its own, so a check that plans can tell it from planning's other refusals. */
export class SegmentsPastBound extends BatchScorerError {
  constructor(what: string, maxSegments: number, fits: string | undefined) {
    const { setting } = LIMITS.segments;
    const remedy =
      fits === undefined
        ? `it has more files with rows than that, and each makes one segment at least: split the run, or raise ${setting}`
        : `choose a --segment-rows (segmentRows) of ${fits}, or raise ${setting}`;
    super('E_LIMIT', `${what}, past ${setting} (${formatLimit('segments', maxSegments)}): ${remedy}`);
  }
}

/**
 * Planning's refusal of an input whose `maxSegments` segments are made by row `rowsSoFar` (1-based,
 * in the whole input) while rows go on: planning stops there, so the smallest `segmentRows` that
 * fits is known only to be more than rowsSoFar / maxSegments; of Parquet (`rowGroups`), whose
 * row groups are never split, only to be more than `segmentRows`.
 */
export function tooManySegments(name: string, segmentRows: number, maxSegments: number, rowsSoFar: number, rowGroups = false): SegmentsPastBound {
  const atLeast = rowGroups ? segmentRows + 1 : Math.ceil(rowsSoFar / maxSegments);
  return new SegmentsPastBound(
    `${name}: its first ${rowsSoFar.toLocaleString('en-US')} rows already make more than ${formatLimit('segments', maxSegments)} segments of --segment-rows ${segmentRows}`,
    maxSegments,
    `at least ${atLeast.toLocaleString('en-US')} (more if the input has many more rows)`,
  );
}

/** The refusal of an input whose rows are counted: `fileRows` make more than `maxSegments` segments at `segmentRows`. */
export function segmentsPastBound(name: string, fileRows: readonly number[], segmentRows: number, maxSegments: number): SegmentsPastBound {
  const minimum = minimumSegmentRows(fileRows, maxSegments);
  const rows = fileRows.reduce((n, r) => n + r, 0).toLocaleString('en-US');
  return new SegmentsPastBound(
    `${name}: its ${rows} rows make ${segmentsOf(fileRows, segmentRows).toLocaleString('en-US')} segments of --segment-rows ${segmentRows}`,
    maxSegments,
    minimum === undefined ? undefined : `${minimum.toLocaleString('en-US')} or more`,
  );
}
