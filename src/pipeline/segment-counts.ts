/** What scoring a segment counted; summed over segments into the manifest. */
export interface SegmentCounts {
  rowsIn: number;
  rowsScored: number;
  rowsQuarantined: number;
  /** Predict calls, not counting retries. */
  requests: number;
  retries: number;
  /** Batches split in halves to isolate rows the engine failed on. */
  splits: number;
  /** Numeric predictions outside their own interval (`min <= value <= max` broken). */
  intervalViolations: number;
  /** Answer rows without the row id echo, aligned by position alone. */
  unechoedRows: number;
}

export function emptyCounts(): SegmentCounts {
  return { rowsIn: 0, rowsScored: 0, rowsQuarantined: 0, requests: 0, retries: 0, splits: 0, intervalViolations: 0, unechoedRows: 0 };
}

/** The counts of several segments, added up (extra fields of done markers are left out). */
export function sumCounts(segments: readonly SegmentCounts[]): SegmentCounts {
  const total = emptyCounts();
  for (const counts of segments) for (const key of Object.keys(total) as (keyof SegmentCounts)[]) total[key] += counts[key];
  return total;
}

/** Who scored a segment in queue mode, kept in its done marker for the manifest's queue facts. */
export interface SegmentFacts {
  worker: string;
  jobId: string;
  attempt: number;
}
