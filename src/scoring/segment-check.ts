import type { Limits, RunOptions } from '../config/index.js';
import { isGzip, isParquet } from '../formats/index.js';
import { formatLocation, type ListedFile, listInputFiles, type Location, type Storage } from '../storage/index.js';
import { rangeRead } from './input-bytes.js';
import { inflationCap } from './input-bounds.js';
import { planInput } from './plan.js';
import { runPlanOptions } from './prepare-run.js';
import { segmentsOf, segmentsPastBound, SegmentsPastBound } from './segment-bound.js';
import { dryRunBounds, withinBounds } from './work-bounds.js';

/** What checkSegments found: the input fits MAX_SEGMENTS, or it could not tell (and why). */
export type SegmentCheck = { fits: true } | { fits: false; undecided: string };

/** Whose work the bounds bound, as its E_LIMIT (logged, never answered) names it. */
const COUNTING = "counting an input's rows for MAX_SEGMENTS";

/**
 * Refuses, before any job of the run exists, an input that makes more than MAX_SEGMENTS segments
 * at the run's `segmentRows`: E_LIMIT naming the smallest `segmentRows` that fits. First by its
 * files' bytes alone (a row takes 2 bytes at least, a line feed and a character; a gzipped file
 * inflates to at most MAX_INFLATION_RATIO times its bytes, or 64 MiB, and MAX_INFLATED_BYTES):
 * if even that many rows fit, nothing is read. Otherwise the input is planned as its run would
 * plan it, writing nothing, within a dry run's bounds (MAX_DRY_RUN_SECONDS, MAX_DRY_RUN_BYTES):
 * planning stops at the first segment past the bound, and the rows are then counted to name the
 * smallest `segmentRows` (or, if the bounds do not let them be, the least planning could tell).
 * Whatever else stops it (the bounds, an input this process cannot read) leaves it undecided:
 * the run's planning refuses it then, before any segment job is added.
 */
export async function checkSegments(storage: Storage, input: Location, options: RunOptions, limits: Limits, signal?: AbortSignal): Promise<SegmentCheck> {
  let verdict: SegmentCheck | { refused: SegmentsPastBound };
  try {
    verdict = await withinBounds(dryRunBounds(limits), COUNTING, signal, (bounded, onBytes) =>
      plannedVerdict(storage, input, options, limits, bounded, onBytes),
    );
  } catch (err) {
    return { fits: false, undecided: (err as Error).message };
  }
  if ('refused' in verdict) throw verdict.refused;
  return verdict;
}

/** checkSegments' work, within its bounds: the bound by bytes, then the input planned, then its rows counted. */
async function plannedVerdict(
  storage: Storage,
  input: Location,
  options: RunOptions,
  limits: Limits,
  signal: AbortSignal,
  onBytes: (bytes: number) => void,
): Promise<SegmentCheck | { refused: SegmentsPastBound }> {
  const files = await listInputFiles(storage, input, signal);
  const most = files.map((f) => rowsAtMost(f, limits, options.limit));
  if (most.every((rows) => rows !== undefined) && segmentsOf(most, options.segmentRows) <= limits.segments) return { fits: true };
  if (await farBelowBound(storage, files, options, limits, signal)) return { fits: true };
  try {
    await planInput(storage, input, { ...runPlanOptions(options, limits), onBytes, signal });
    return { fits: true };
  } catch (err) {
    if (!(err instanceof SegmentsPastBound)) throw err;
    // One segment a file: every row counted, if what the bounds leave lets them be.
    const counted = await planInput(storage, input, {
      ...runPlanOptions(options, { ...limits, segments: Number.MAX_SAFE_INTEGER }),
      segmentRows: Number.MAX_SAFE_INTEGER,
      onBytes,
      signal,
    }).catch(() => undefined);
    const rows = counted?.syntax === 'parquet' ? undefined : counted?.files.map((f) => f.rows);
    return { refused: rows ? segmentsPastBound(formatLocation(input), rows, options.segmentRows, limits.segments) : err };
  }
}

/** No bytes of a file: it is judged by its name alone. */
const NO_BYTES = Buffer.alloc(0);

/** Whether a file is gzipped or Parquet by its name: its bytes are then no count of its rows. */
function notPlainByName(file: ListedFile): boolean {
  const name = formatLocation(file.location);
  return isGzip(name, NO_BYTES) || isParquet(name, NO_BYTES);
}

/** Bytes read from the start of each plain text file to judge its rows by its line feeds. */
const SAMPLE_BYTES = 1024 * 1024;

/** Files sampled at most: an input of more is counted by planning, within the bounds, as before. */
const SAMPLED_FILES = 64;

/**
 * Whether plain text files (not gzipped, not Parquet) judged by the line feeds of their first
 * SAMPLE_BYTES make at most half of MAX_SEGMENTS segments. Line feeds are never fewer than rows
 * (a quoted field may hold some), so the guess errs high; a file whose first rows are much longer
 * than the rest can still fool it, and then the run's planning refuses it. Without this, every
 * submission of a file above 400 MB (2 bytes a row, 20,000 rows a segment) would be planned here
 * for up to a dry run's bounds before it is queued.
 */
async function farBelowBound(storage: Storage, files: readonly ListedFile[], options: RunOptions, limits: Limits, signal: AbortSignal): Promise<boolean> {
  if (files.length > SAMPLED_FILES || files.some((f) => notPlainByName(f))) return false;
  const likely: number[] = [];
  for (const file of files) {
    const sample = await rangeRead(storage, file.location, file, signal)(0, Math.min(file.size, SAMPLE_BYTES));
    let lines = 1;
    for (let at = sample.indexOf(0x0a); at !== -1; at = sample.indexOf(0x0a, at + 1)) lines++;
    likely.push(Math.min(Math.ceil((file.size * lines) / Math.max(1, sample.length)), options.limit ?? Infinity));
  }
  return segmentsOf(likely, options.segmentRows) <= limits.segments / 2;
}

/**
 * The most data rows a file can hold by its size (undefined for Parquet, whose rows its footer
 * says), judged by its name: a file gzipped or Parquet without saying so is left to planning.
 */
function rowsAtMost(file: ListedFile, limits: Limits, limit = Infinity): number | undefined {
  const name = formatLocation(file.location);
  if (isParquet(name, NO_BYTES)) return undefined;
  const bytes = isGzip(name, NO_BYTES) ? inflationCap(limits, file.size, name).bytes : file.size;
  return Math.min(Math.ceil(bytes / 2), limit);
}
