import { basename, type Location, type Storage } from '../storage/index.js';
import { concatenateParts } from './assemble.js';
import type { OutputFile } from './manifest.js';
import { runFiles, segmentErrorsPiece, type PreparedRun } from './prepared-run.js';
import { sumCounts, type SegmentCounts } from './segment-counts.js';
import { readSegmentsDone } from './segment-done.js';

/** What a run that failed on its error threshold keeps of its quarantined rows, and the counts that agree with them. */
export interface KeptQuarantine {
  /**
   * The failed run's counts, of what its folder keeps: its finished segments' counts (their done
   * markers), but every row of errors.jsonl as quarantined (those of the segments that stopped
   * midway included), and `rowsIn` the rows scored and quarantined.
   */
  counts: SegmentCounts & { segments: number };
  /** Each segment's rows in errors.jsonl, by segment index: 0 for a segment without a part. */
  bySegment: number[];
  /** errors.jsonl as the manifest lists it among the run folder's files. */
  file: OutputFile;
}

/**
 * Writes errors.jsonl of a run that failed on its error threshold: the quarantined rows of every
 * segment part there is (finished segments, segments that stopped midway, and those an earlier
 * attempt of a resumed run left), in segment and so input order, so the rows that made it fail are
 * in the run folder. Called once every segment has stopped, it counts the lines as it copies them:
 * every count of the failed run is taken from here, so they all agree with the file. A resumed
 * run writes the whole file again when it succeeds.
 */
export async function keepQuarantinedRows(storage: Storage, run: PreparedRun): Promise<KeptQuarantine> {
  const { folder } = run;
  const parts: { location: Location; index: number; piece: number }[] = [];
  for await (const { location } of storage.list(runFiles.segmentsFolder(folder))) {
    const named = segmentErrorsPiece(basename(location));
    if (named && named.index < run.input.segments.length) parts.push({ location, ...named });
  }
  // A segment stopped on a cap and resumed has its rows in pieces, in order.
  parts.sort((a, b) => a.index - b.index || a.piece - b.piece);
  const bySegment = run.input.segments.map(() => 0);
  const written = await concatenateParts(
    storage,
    runFiles.errors(folder),
    parts.map((p) => p.location),
    { onChunk: (k, chunk) => (bySegment[parts[k].index] += lineEnds(chunk)) },
  );
  const finished = (await readSegmentsDone(storage, run, (done) => ({ ...done, profile: null }))).filter((d) => d !== undefined);
  const kept = sumCounts(finished);
  const rowsQuarantined = bySegment.reduce((sum, rows) => sum + rows, 0);
  return {
    counts: { ...kept, rowsQuarantined, rowsIn: kept.rowsScored + rowsQuarantined, segments: finished.length },
    bySegment,
    file: { ...written, rows: rowsQuarantined },
  };
}

/** The line feeds in a chunk: errors.jsonl has one per row, and none inside one (JSON escapes them). */
function lineEnds(chunk: Buffer): number {
  let n = 0;
  for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) n++;
  return n;
}
