import { z } from 'zod';
import type { Location, Storage } from '../storage/index.js';
import { segmentComparisonSchema } from './model-comparison.js';
import { segmentProfileSchema } from './prediction-profile.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { readRunFile, writeRunFile } from './run-file.js';
import { segmentCountsSchema, segmentFactsSchema } from './segment-counts.js';

/**
 * A segment's done marker, written after its parts: its counts, the bytes of its parts (so
 * assembly knows the output's size without asking storage), who scored it in queue mode, and the
 * prediction profile of its scored rows (null in done markers of releases that kept none).
 * Its presence is what makes a segment done.
 */
export const segmentDoneSchema = segmentCountsSchema.extend(segmentFactsSchema.partial().shape).extend({
  bytes: z.object({ rows: z.int().min(0), errors: z.int().min(0) }),
  profile: segmentProfileSchema.nullable().default(null),
  /** A database input's segment: the sha256 of its rows as read (see readDatabaseSegment); absent for files. */
  sha256: z.string().optional(),
  /** Shadow scoring's comparison of the segment's rows (see ComparisonAccumulator); absent without --compare-model. */
  comparison: segmentComparisonSchema.optional(),
  /** Requests the segment's process allowed in flight when it ended: where `--concurrency auto` got to (absent before 0.4.0). */
  slots: z.int().min(1).optional(),
  /**
   * The files its rows are in, pieces 0 to pieces - 1 (see runFiles.segmentPart): more than one
   * for a segment stopped on a cap and resumed (absent in markers of releases before: one).
   */
  pieces: z.int().min(1).default(1),
});
export type SegmentDone = z.output<typeof segmentDoneSchema>;

/** Done markers read at once: enough to hide storage latency, few enough to be polite. */
export const READS_AT_ONCE = 16;

/** Writes a segment's done marker, and answers it as `readSegmentDone` would read it back. */
export async function writeSegmentDone(storage: Storage, run: PreparedRun, index: number, done: z.input<typeof segmentDoneSchema>): Promise<SegmentDone> {
  const marker = segmentDoneSchema.parse(done);
  await writeRunFile(storage, runFiles.segmentDone(run.folder, index), done);
  return marker;
}

/** A segment's done marker, or undefined while it is not done. */
export function readSegmentDone(storage: Storage, folder: Location, index: number, signal?: AbortSignal): Promise<SegmentDone | undefined> {
  return readRunFile(storage, runFiles.segmentDone(folder, index), segmentDoneSchema, signal);
}

/**
 * Every segment's done marker, in segment order; undefined for the segments not done. Read a window
 * at a time; `keep`, when given, sees each marker in segment order as its window is in and answers
 * what to keep of it (assembly folds the profiles and keeps the rest, so that a run of thousands
 * of segments never holds every sketch at once).
 */
export async function readSegmentsDone(
  storage: Storage,
  run: PreparedRun,
  keep: (done: SegmentDone, index: number) => SegmentDone = (done) => done,
): Promise<(SegmentDone | undefined)[]> {
  const all: (SegmentDone | undefined)[] = [];
  for (let first = 0; first < run.input.segments.length; first += READS_AT_ONCE) {
    const window = run.input.segments.slice(first, first + READS_AT_ONCE);
    const read = await Promise.all(window.map((s) => readSegmentDone(storage, run.folder, s.index)));
    read.forEach((done, k) => all.push(done && keep(done, first + k)));
  }
  return all;
}

/** The indexes of the segments whose done marker is missing: what is left to score. */
export function unfinished(run: PreparedRun, done: readonly (SegmentDone | undefined)[]): number[] {
  return run.input.segments.filter((_, i) => done[i] === undefined).map((s) => s.index);
}

/** A done segment's files of one kind, one per piece in order: `file` names a piece's (see runFiles.segmentPart). */
export function piecesOf(done: Pick<SegmentDone, 'pieces'>, file: (piece: number) => Location): Location[] {
  return Array.from({ length: done.pieces }, (_, piece) => file(piece));
}
