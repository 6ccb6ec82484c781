import { BatchScorerError } from '../errors.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { readManifest, type Manifest } from './manifest.js';
import { runFiles } from './prepared-run.js';
import { writeRunFile } from './run-file.js';
import { requireNext } from './run-lifecycle.js';

/** The most of `by` a judgement keeps: a name, not a document. */
export const ACCEPTED_BY_CHARS = 200;
/** The most of `why` a judgement keeps: a reason, not a report. */
export const JUDGEMENT_WHY_CHARS = 1000;

/** What judging a held run decides: `accept` (it succeeds) or `reject` (it fails for good). */
export type Verdict = 'accept' | 'reject';

/** Who judges a held run, and why (optional). */
export interface Judgement {
  verdict: Verdict;
  by: string;
  why?: string;
}

/** What judgeRun did: the manifest as it is now, and whether the run had been judged so before (nothing changed then). */
export interface JudgedRun {
  manifest: Manifest & { accepted?: NonNullable<Manifest['accepted']>; rejected?: NonNullable<Manifest['rejected']> };
  already: boolean;
}

/**
 * Judges a run held by its drift gate (state `held`, see run-lifecycle.ts): its outputs were
 * written whole, only `_SUCCESS` was held back. `accept` rewrites manifest.json as succeeded,
 * keeping the former error under `accepted` with who, when and why, then writes `_SUCCESS`, last,
 * as a finishing run does; `reject` rewrites it as failed, under `rejected`, and writes no
 * `_SUCCESS`. A run judged so before is answered as it is (an accepted one gets its `_SUCCESS` if a
 * crash left it out). Any other run is refused (E_RUN_CONFLICT, naming its state): a failed run's
 * outputs are not whole, and one that succeeded needs nothing.
 */
export async function judgeRun(storage: Storage, folder: Location, judgement: Judgement, signal?: AbortSignal): Promise<JudgedRun> {
  const where = formatLocation(folder);
  const manifest = await readManifest(storage, folder, signal);
  if (!manifest) throw new BatchScorerError('E_RUN_CONFLICT', `there is no manifest.json in ${where}: the run has not finished there, or never ran`);
  const success = runFiles.success(folder);
  const before = judgement.verdict === 'accept' ? manifest.accepted : manifest.rejected;
  if (before) {
    // The manifest is written before _SUCCESS: a crash between them is finished here.
    if (judgement.verdict === 'accept' && !(await storage.exists(success, signal))) await storage.write(success, '', { signal });
    return { manifest, already: true };
  }
  const to = requireNext(manifest.runId, manifest.state, judgement.verdict, judgement.verdict === 'accept' ? 'accepted' : 'rejected');
  if (await storage.exists(success, signal)) {
    throw new BatchScorerError('E_RUN_CONFLICT', `${where} has a _SUCCESS beside the manifest of a held run: it was edited by hand`);
  }
  const { error, ...rest } = manifest;
  const record = {
    by: judgement.by.slice(0, ACCEPTED_BY_CHARS),
    at: new Date().toISOString(),
    ...(judgement.why && { why: judgement.why.slice(0, JUDGEMENT_WHY_CHARS) }),
    error: error ?? { code: 'E_DRIFT', message: 'held by its drift gate' },
  };
  const judged: Manifest =
    judgement.verdict === 'accept' ? { ...rest, state: to as 'succeeded', accepted: record } : { ...manifest, state: to as 'failed', rejected: record };
  await writeRunFile(storage, runFiles.manifest(folder), judged, { pretty: true, signal });
  if (judgement.verdict === 'accept') await storage.write(success, '', { signal });
  return { manifest: judged, already: false };
}
