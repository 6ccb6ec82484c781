import pLimit from 'p-limit';
import { parseLocation } from '../storage/location.js';
import { readJsonIfExists, type Storage } from '../storage/storage.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import type { SegmentCounts, SegmentFacts } from './segment-counts.js';

/**
 * A segment's done marker, written after its parts: its counts, the bytes of its parts (so
 * assembly knows the output's size without asking storage), and who scored it in queue mode.
 * Its presence is what makes a segment done.
 */
export interface SegmentDone extends SegmentCounts, Partial<SegmentFacts> {
  bytes: { rows: number; errors: number };
}

/** Done markers read at once: enough to hide storage latency, few enough to be polite. */
const READS_AT_ONCE = 16;

export function writeSegmentDone(storage: Storage, run: PreparedRun, index: number, done: SegmentDone): Promise<unknown> {
  return storage.write(runFiles.segmentDone(parseLocation(run.folder), index), JSON.stringify(done));
}

/** A segment's done marker, or undefined while it is not done. */
export function readSegmentDone(storage: Storage, folder: string, index: number): Promise<SegmentDone | undefined> {
  return readJsonIfExists<SegmentDone>(storage, runFiles.segmentDone(parseLocation(folder), index));
}

/** Every segment's done marker, in segment order; undefined for the segments not done. */
export function readSegmentsDone(storage: Storage, run: PreparedRun): Promise<(SegmentDone | undefined)[]> {
  const limit = pLimit(READS_AT_ONCE);
  return Promise.all(run.input.segments.map((s) => limit(() => readSegmentDone(storage, run.folder, s.index))));
}

/** The indexes of the segments whose done marker is missing: what is left to score. */
export function unfinished(run: PreparedRun, done: readonly (SegmentDone | undefined)[]): number[] {
  return run.input.segments.filter((_, i) => done[i] === undefined).map((s) => s.index);
}
