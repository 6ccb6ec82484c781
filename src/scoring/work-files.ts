import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { piecesOf, type SegmentDone } from './segment-done.js';

/**
 * The names, below `_work`, of every file a prepared run writes there: its claim, run.json,
 * caps.json and attempt.json, the staged copies of its inputs, and each segment's parts and quarantined rows (a file
 * of each per piece, see `done`), done marker and prefix marker.
 */
export function workFileNames(run: PreparedRun, done: readonly Pick<SegmentDone, 'pieces'>[]): Set<string> {
  const { folder } = run;
  const work = formatLocation(runFiles.work(folder));
  const below = (loc: Location) => formatLocation(loc).slice(work.length + 1);
  const files = [
    runFiles.claim(folder),
    runFiles.prepared(folder),
    runFiles.caps(folder),
    runFiles.attempt(folder),
    ...(run.input.syntax === 'postgresql' ? [] : run.input.files).map((_, i) => runFiles.stagedInput(folder, i)),
    ...run.input.segments.flatMap((s) => [
      ...piecesOf(done[s.index], (piece) => runFiles.segmentPart(folder, s.index, run.outputFormat, piece)),
      ...piecesOf(done[s.index], (piece) => runFiles.segmentErrors(folder, s.index, piece)),
      runFiles.segmentDone(folder, s.index),
      runFiles.segmentPrefix(folder, s.index),
    ]),
  ];
  return new Set(files.map(below));
}

/**
 * Removes a succeeded run's `_work` area by the names of the files the run wrote there (never a
 * recursive delete): a file someone else put in `_work` stays, and so does the folder holding it.
 */
export function removeWorkFiles(storage: Storage, run: PreparedRun, done: readonly Pick<SegmentDone, 'pieces'>[]): Promise<void> {
  const names = workFileNames(run, done);
  return storage.removeFiles(runFiles.work(run.folder), (name) => names.has(name));
}

/** The shapes of the names a run gives its files in `_work` (see workFileNames), below it. */
const WORK_FILE_NAME =
  /^(?:claim|run|caps|attempt)\.json$|^inputs\/\d{5}\.txt$|^segments\/\d{5}(?:\.\d+)?\.(?:csv|jsonl|values\.jsonl|errors\.jsonl|done\.json|prefix\.json)$/;

/**
 * Removes a succeeded run's `_work` area where its plan is not at hand (a rescore's version
 * finished by its retry): by the shapes of the names a run gives its files there, never a
 * recursive delete; a file of another name stays, and so does the folder holding it.
 */
export function removeWorkFilesByName(storage: Storage, folder: Location): Promise<void> {
  return storage.removeFiles(runFiles.work(folder), (name) => WORK_FILE_NAME.test(name));
}
