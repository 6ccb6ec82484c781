import { z } from 'zod';

const count = z.int().min(0);

/** What scoring a segment counted; summed over segments into the manifest. */
export const segmentCountsSchema = z.object({
  rowsIn: count,
  rowsScored: count,
  rowsQuarantined: count,
  /** Predict calls, not counting retries. */
  requests: count,
  retries: count,
  /** Batches split in halves to isolate rows the engine failed on. */
  splits: count,
  /** Numeric predictions outside their own interval (`min <= value <= max` broken). */
  intervalViolations: count,
  /** Answer rows without the row id echo, aligned by position alone. */
  unechoedRows: count,
  /**
   * Connections opened to the model service (keep-alive makes it about the concurrency, not the
   * requests); counted by the segment that finished first after each was opened. 0 in done
   * markers of releases that counted none.
   */
  connectionsOpened: count.default(0),
});
export type SegmentCounts = z.output<typeof segmentCountsSchema>;

export function emptyCounts(): SegmentCounts {
  return { rowsIn: 0, rowsScored: 0, rowsQuarantined: 0, requests: 0, retries: 0, splits: 0, intervalViolations: 0, unechoedRows: 0, connectionsOpened: 0 };
}

/** The counts of several segments, added up (extra fields of done markers are left out). */
export function sumCounts(segments: readonly SegmentCounts[]): SegmentCounts {
  const total = emptyCounts();
  for (const counts of segments) addCounts(total, counts);
  return total;
}

/** Adds `counts` into `total`, field by field. */
export function addCounts(total: SegmentCounts, counts: Readonly<SegmentCounts>): void {
  for (const key of Object.keys(total) as (keyof SegmentCounts)[]) total[key] += counts[key];
}

/** Who scored a segment in queue mode, kept in its done marker for the manifest's queue facts. */
export const segmentFactsSchema = z.object({ worker: z.string(), jobId: z.string(), attempt: z.int().min(1) });
export type SegmentFacts = z.output<typeof segmentFactsSchema>;
