import type { z } from 'zod';
import type { Location, Storage } from '../storage/index.js';
import { ComparisonAccumulator, segmentComparisonSchema } from './model-comparison.js';
import { ProfileAccumulator, segmentProfileSchema } from './prediction-profile.js';
import { runFiles, sentInputColumns, type PreparedRun } from './prepared-run.js';
import { readRunFile, writeRunFile } from './run-file.js';
import { segmentCountsSchema, sumCounts } from './segment-counts.js';
import { READS_AT_ONCE, readSegmentsDone, segmentDoneSchema, unfinished, type SegmentDone } from './segment-done.js';

/**
 * What a segment stopped on a cap keeps: its first `rowsIn` rows, scored or quarantined, in its
 * pieces 0 to `pieces - 1`, with their counts, bytes and profile, in the done marker's shape. A
 * cap stops a run midway through its segments; without this, the rows its segments had scored
 * (paid for, and counted against the cap) were thrown away and sent again by the resume. The
 * resume goes on from row `rowsIn` into piece `pieces`, and its done marker counts every piece.
 * Only a segment stopped on a cap writes one: a segment that failed otherwise is scored again
 * from where its prefix (if any) ends.
 */
export type SegmentPrefix = SegmentDone;

/** A segment marker as written: the done marker's fields before defaults. */
export type SegmentMarker = z.input<typeof segmentDoneSchema>;

/** A segment's prefix marker, or undefined when it has kept no rows. */
export function readSegmentPrefix(storage: Storage, folder: Location, index: number, signal?: AbortSignal): Promise<SegmentPrefix | undefined> {
  return readRunFile(storage, runFiles.segmentPrefix(folder, index), segmentDoneSchema, signal);
}

/** Records what segment `index` keeps, once its pieces are written. */
export async function writeSegmentPrefix(storage: Storage, folder: Location, index: number, prefix: SegmentMarker): Promise<void> {
  await writeRunFile(storage, runFiles.segmentPrefix(folder, index), prefix);
}

/**
 * The marker of segment `index`'s pieces so far: `before` (what its earlier pieces keep, none for
 * a segment scored in one go) joined with `piece`, the one just written: counts and bytes added,
 * profiles and comparisons merged (earlier pieces first, as segments are), pieces counted.
 */
export function joinPieces(run: PreparedRun, index: number, before: SegmentPrefix | undefined, piece: SegmentMarker): SegmentMarker {
  if (!before) return { ...piece, pieces: 1 };
  const counts = sumCounts([before, segmentCountsSchema.parse(piece)]);
  let profile: SegmentMarker['profile'] = null;
  if (before.profile && piece.profile) {
    const joined = new ProfileAccumulator(run.schema, sentInputColumns(run));
    joined.merge(before.profile, index);
    joined.merge(segmentProfileSchema.parse(piece.profile), index);
    profile = joined.toJSON();
  }
  let comparison: SegmentMarker['comparison'];
  if (before.comparison && piece.comparison) {
    const joined = new ComparisonAccumulator(run.schema);
    joined.merge(before.comparison, index);
    joined.merge(segmentComparisonSchema.parse(piece.comparison), index);
    comparison = joined.toJSON();
  }
  return {
    ...piece,
    ...counts,
    bytes: { rows: before.bytes.rows + piece.bytes.rows, errors: before.bytes.errors + piece.bytes.errors },
    profile,
    ...(comparison && { comparison }),
    pieces: before.pieces + 1,
  };
}

/**
 * What a run stopped on a cap keeps for its resume: its finished segments, and the rows scored in
 * them and in the prefixes of the others (see SegmentPrefix).
 */
export async function keptSoFar(storage: Storage, run: PreparedRun, signal?: AbortSignal): Promise<{ segments: number; rows: number }> {
  const done = await readSegmentsDone(storage, run, (d) => ({ ...d, profile: null, comparison: undefined }));
  const open = unfinished(run, done);
  let rows = done.reduce((n, d) => n + (d?.rowsScored ?? 0), 0);
  for (let first = 0; first < open.length; first += READS_AT_ONCE) {
    const prefixes = await Promise.all(open.slice(first, first + READS_AT_ONCE).map((i) => readSegmentPrefix(storage, run.folder, i, signal)));
    rows += prefixes.reduce((n, p) => n + (p?.rowsScored ?? 0), 0);
  }
  return { segments: done.length - open.length, rows };
}
