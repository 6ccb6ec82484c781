import { BatchScorerError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { formatLocation, type Location } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import { assembleOutputs, readFinishedSegments } from './assemble.js';
import { buildManifest, type Manifest, type ManifestParts, type QueueFacts } from './manifest.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { writeRunFile } from './run-state.js';
import type { SegmentFacts } from './segment-counts.js';

/**
 * Ends a run whose segments are all done: checks the quarantined share, joins the outputs,
 * writes manifest.json and then `_SUCCESS`, last, and removes the `_work` area.
 */
export async function finishRun(
  storage: Storage,
  run: PreparedRun,
  facts: { startedAt: string; queue?: (segments: Partial<SegmentFacts>[]) => QueueFacts },
  log: Logger,
  signal?: AbortSignal,
): Promise<Manifest> {
  const { folder } = run;
  const finished = await readFinishedSegments(storage, run);
  const { counts } = finished;
  const { maxErrorRate } = run.request.options;
  if (counts.rowsQuarantined > Math.floor(counts.rowsIn * maxErrorRate)) {
    throw new BatchScorerError(
      'E_ERROR_RATE',
      `${counts.rowsQuarantined} of ${counts.rowsIn} rows were quarantined, more than --max-error-rate ${maxErrorRate} allows; the rows and reasons are in the segments' errors under ${formatLocation(runFiles.work(folder))}`,
    );
  }
  const outputs = await assembleOutputs(storage, run, finished, signal);
  const warnings =
    counts.unechoedRows > 0
      ? [`the server did not echo ${run.request.options.rowIdMember} for ${counts.unechoedRows} rows: those were aligned by position alone`]
      : [];
  const manifest = buildManifest({ runId: run.runId, startedAt: facts.startedAt, run, counts, outputs, warnings, queue: facts.queue?.(finished.done) });
  await writeRunFile(storage, runFiles.manifest(folder), manifest, { pretty: true, signal });
  await storage.write(runFiles.success(folder), '', { signal });
  // The run is complete from here on; leftover parts are litter, not a failure.
  await storage.removePrefix(runFiles.work(folder)).catch((err: unknown) => {
    log.warn({ err: errorMessage(err), folder: formatLocation(folder) }, 'could not remove _work; it may be deleted by hand');
  });
  return manifest;
}

/**
 * Records a failed run: a manifest that says why, and never `_SUCCESS`. `_work` stays, so the
 * same run id resumes from the segments that finished. Never over a succeeded run's manifest, nor
 * another run's. Best effort: a failure to write it is logged, and the original error stays the
 * one reported.
 */
export async function recordFailure(storage: Storage, folder: Location, parts: ManifestParts, log: Logger): Promise<Manifest> {
  const manifest = buildManifest(parts);
  try {
    // A run id taken by another run, or a run that succeeded meanwhile: its manifest is not ours to replace.
    if ((parts.error as BatchScorerError | undefined)?.code === 'E_RUN_EXISTS') return manifest;
    if (await storage.exists(runFiles.success(folder))) return manifest;
    await writeRunFile(storage, runFiles.manifest(folder), manifest, { pretty: true });
  } catch (err) {
    log.error({ err: errorMessage(err) }, 'could not write the failed run manifest');
  }
  return manifest;
}
