import { errorMessage } from '../errors.js';
import { formatLocation, type Storage } from '../storage/index.js';
import type { Baseline } from './drift.js';
import { readManifest } from './manifest.js';
import { runFiles, type PreparedRun } from './prepared-run.js';

/**
 * Finds the run a finishing run's drift is measured against: a baseline, or a sentence saying why
 * there is none (kept as a manifest warning where the run asked for one). The pipeline's previous
 * run is found where runs are listed by pipeline (queue mode); the core knows only run folders.
 */
export type FindBaseline = (run: PreparedRun, signal?: AbortSignal) => Promise<Baseline | string | null>;

/**
 * Run `runId` of the same --out as a baseline, if it succeeded (or was accepted) with a profile;
 * otherwise why not.
 */
export async function readBaseline(
  storage: Storage,
  run: PreparedRun,
  runId: string,
  chosen: Baseline['chosen'],
  signal?: AbortSignal,
): Promise<Baseline | string> {
  const folder = runFiles.folder(run.request.out, runId);
  let manifest;
  try {
    manifest = await readManifest(storage, folder, signal);
  } catch (err) {
    return `baseline run ${runId}: its manifest cannot be read (${errorMessage(err)})`;
  }
  if (!manifest) return `baseline run ${runId}: no manifest.json in ${formatLocation(folder)}`;
  if (manifest.state !== 'succeeded') return `baseline run ${runId} ${manifest.state}: only a run that succeeded is compared with`;
  if (!manifest.profile) return `baseline run ${runId} has no prediction profile`;
  return { runId, finishedAt: manifest.finishedAt, chosen, profile: manifest.profile };
}

/** The baseline a run names with `baselineRun`, or null when it names none. */
export const namedBaseline =
  (storage: Storage): FindBaseline =>
  (run, signal) => {
    const named = run.request.options.baselineRun;
    return named === undefined ? Promise.resolve(null) : readBaseline(storage, run, named, 'named', signal);
  };
