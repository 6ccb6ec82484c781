import { BatchScorerError } from '../errors.js';
import { formatLocation, type Location } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import { readManifest, type Manifest } from './manifest.js';
import { runFiles } from './prepared-run.js';
import { writeRunFile } from './run-file.js';

/** The most of `accepted.by` a manifest keeps: a name, not a document. */
export const ACCEPTED_BY_CHARS = 200;

/** What acceptRun did: the manifest as it is now, and whether the run had been accepted before (nothing changed then). */
export interface AcceptedRun {
  manifest: Manifest & { accepted: NonNullable<Manifest['accepted']> };
  already: boolean;
}

/**
 * Accepts a run that failed on its drift (E_DRIFT): its outputs were written whole, only
 * `_SUCCESS` was held back until someone judged the change expected. Rewrites manifest.json as
 * succeeded, keeping the former error under `accepted` with who accepted it and when, then writes
 * `_SUCCESS`, last, as a finishing run does. A run accepted before is answered as it is (its
 * `_SUCCESS` written if a crash left it out). Any other run is refused (E_RUN_CONFLICT): a run
 * failed for another reason has outputs that are not whole, and one that succeeded needs nothing.
 */
export async function acceptRun(storage: Storage, folder: Location, by: string, signal?: AbortSignal): Promise<AcceptedRun> {
  const where = formatLocation(folder);
  const manifest = await readManifest(storage, folder, signal);
  if (!manifest) throw refused(`there is no manifest.json in ${where}: the run has not finished there, or never ran`);
  const success = runFiles.success(folder);
  if (manifest.accepted) {
    const { accepted } = manifest;
    // The manifest is written before _SUCCESS: a crash between them is finished here.
    if (!(await storage.exists(success, signal))) await storage.write(success, '', { signal });
    return { manifest: { ...manifest, accepted }, already: true };
  }
  const { error, ...rest } = manifest;
  if (manifest.state !== 'failed' || error?.code !== 'E_DRIFT') {
    const why = manifest.state === 'failed' ? `failed with ${error?.code ?? 'no error code'}` : manifest.state;
    throw refused(`run ${manifest.runId} ${why}; only a run that failed on its drift (E_DRIFT) can be accepted`);
  }
  if (await storage.exists(success, signal)) throw refused(`${where} has a _SUCCESS beside a manifest of a failed run: it was edited by hand`);
  const accepted = { ...rest, state: 'succeeded' as const, accepted: { by: by.slice(0, ACCEPTED_BY_CHARS), at: new Date().toISOString(), error } };
  await writeRunFile(storage, runFiles.manifest(folder), accepted, { pretty: true, signal });
  await storage.write(success, '', { signal });
  return { manifest: accepted, already: false };
}

function refused(message: string): BatchScorerError {
  return new BatchScorerError('E_RUN_CONFLICT', message);
}
