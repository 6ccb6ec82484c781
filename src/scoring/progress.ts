/** How often progress is reported at most: a few times a second is live enough, and cheap. */
export const PROGRESS_EVERY_MS = 250;

/** A run's progress, as job progress, `status` and the progress bar show it. */
export interface RunProgress {
  rowsDone: number;
  rowsTotal: number;
  rowsQuarantined: number;
  segmentsDone: number;
  segmentsTotal: number;
  rowsPerSecond: number;
  etaSeconds: number | null;
}

/** Rate and ETA over the rows done since tracking began (a resumed run counts from its resume). */
export function computeProgress(counts: Omit<RunProgress, 'rowsPerSecond' | 'etaSeconds'>, rowsSinceStart: number, elapsedMs: number): RunProgress {
  const rowsPerSecond = elapsedMs > 0 ? Math.round((rowsSinceStart * 1000) / elapsedMs) : 0;
  const left = counts.rowsTotal - counts.rowsDone;
  return { ...counts, rowsPerSecond, etaSeconds: left === 0 ? 0 : rowsPerSecond > 0 ? Math.ceil(left / rowsPerSecond) : null };
}
