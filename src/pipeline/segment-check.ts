import { INFLATION_FLOOR_BYTES, type Limits } from '../config/limits.js';
import type { RunOptions } from '../config/run-options.js';
import type { BatchScorerError } from '../errors.js';
import { listInputFiles } from '../storage/input-files.js';
import { formatLocation, type Location } from '../storage/location.js';
import type { ListedFile, Storage } from '../storage/storage-types.js';
import { planInput } from './plan.js';
import { planOptions } from './prepare-run.js';
import { segmentsOf, segmentsPastBound } from './segment-bound.js';
import { dryRunBudget, withinBudget } from './work-budget.js';

/** What checkSegments found: the input fits MAX_SEGMENTS, or it could not tell (and why). */
export type SegmentCheck = { fits: true } | { fits: false; undecided: string };

/** Whose work the budget bounds, as its E_LIMIT (logged, never answered) names it. */
const COUNTING = "counting an input's rows for MAX_SEGMENTS";

/**
 * Refuses, before any job of the run exists, an input that makes more than MAX_SEGMENTS segments
 * at the run's `segmentRows`: E_LIMIT naming the smallest `segmentRows` that fits. First by its
 * files' bytes alone (a row takes 2 bytes at least, a line feed and a character; a gzipped file
 * inflates to at most MAX_INFLATION_RATIO times its bytes, or 64 MiB, and MAX_INFLATED_BYTES):
 * if even that many rows fit, nothing is read. Otherwise its rows are counted as planning counts
 * them, within a dry run's budget (MAX_DRY_RUN_SECONDS, MAX_DRY_RUN_BYTES), writing nothing.
 * Whatever stops the count (the budget, an input the count cannot read) leaves it undecided: the
 * run's planning refuses it then, before any segment job is added. A Parquet input past the bound
 * by its rows is undecided too: its row groups, never split, decide its segments.
 */
export async function checkSegments(storage: Storage, input: Location, options: RunOptions, limits: Limits, signal?: AbortSignal): Promise<SegmentCheck> {
  let verdict: SegmentCheck | { refused: BatchScorerError };
  try {
    verdict = await withinBudget(dryRunBudget(limits), COUNTING, signal, (budgeted, onBytes) =>
      countedVerdict(storage, input, options, limits, budgeted, onBytes),
    );
  } catch (err) {
    return { fits: false, undecided: (err as Error).message };
  }
  if ('refused' in verdict) throw verdict.refused;
  return verdict;
}

/** checkSegments' work, within its budget: the bound by bytes, then by rows counted. */
async function countedVerdict(
  storage: Storage,
  input: Location,
  options: RunOptions,
  limits: Limits,
  signal: AbortSignal,
  onBytes: (bytes: number) => void,
): Promise<SegmentCheck | { refused: BatchScorerError }> {
  const files = await listInputFiles(storage, input, signal);
  const most = files.map((f) => rowsAtMost(f, limits, options.limit));
  if (most.every((rows) => rows !== undefined) && segmentsOf(most, options.segmentRows) <= limits.segments) return { fits: true };
  // One segment a file: its rows are what is counted.
  const plan = await planInput(storage, input, { ...planOptions(options), segmentRows: Number.MAX_SAFE_INTEGER, maxSegments: undefined, onBytes, signal });
  const rows = plan.files.map((f) => f.rows);
  if (segmentsOf(rows, options.segmentRows) <= limits.segments) return { fits: true };
  if (plan.syntax === 'parquet') return { fits: false, undecided: 'a Parquet input: its row groups, never split, decide its segments' };
  return { refused: segmentsPastBound(formatLocation(input), rows, options.segmentRows, limits.segments) };
}

/**
 * The most data rows a file can hold by its size (undefined for Parquet, whose rows its footer
 * says), judged by its name: a file gzipped or Parquet without saying so is left to planning.
 */
function rowsAtMost(file: ListedFile, limits: Limits, limit = Infinity): number | undefined {
  const name = formatLocation(file.location).toLowerCase();
  if (/\.(parquet|pq)$/.test(name)) return undefined;
  const bytes = name.endsWith('.gz') ? Math.min(limits.inflatedBytes, Math.max(file.size * limits.inflationRatio, INFLATION_FLOOR_BYTES)) : file.size;
  return Math.min(Math.ceil(bytes / 2), limit);
}
