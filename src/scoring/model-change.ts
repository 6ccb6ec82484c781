import { BatchScorerError } from '../errors.js';
import type { Logger } from '../log.js';
import { formatModelRef } from '../service/index.js';
import type { Storage } from '../storage/index.js';
import { activeVersion, describeChanges, describeSnapshotSchema, modelFacts } from './describe-snapshot.js';
import type { Predictor } from './predictor.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { requireRunFile } from './run-file.js';

/** What asking the model again at a run's end needs. */
export interface ModelCheckContext {
  storage: Storage;
  client: Predictor;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * What became of the run's model while the run scored, as warnings for its manifest (each also
 * logged). A run pinned to a version was scored by it throughout; one the server could not pin
 * may have been scored by two models, and fails unless `--on-model-change warn` (E_MODEL_CHANGED).
 */
export async function modelChangeWarnings(run: PreparedRun, ctx: ModelCheckContext): Promise<string[]> {
  return run.model.resolvedVersion === null ? checkModelUnchanged(run, ctx) : checkActiveVersion(run, run.model.resolvedVersion, ctx);
}

/**
 * A run pinned to the model's active version stays on it, whatever the server does meanwhile; but
 * once another version is made active (a retrain), its output is no longer what the model answers:
 * users expect to hear so. A run pinned on purpose to a version that was not the active one
 * (`--model project/model.N`) wanted that version, and is not checked. Best effort: the outputs are
 * good either way, so a describe that fails is a warning, never the run's failure.
 */
async function checkActiveVersion(run: PreparedRun, pinned: number, ctx: ModelCheckContext): Promise<string[]> {
  const ref = { project: run.model.project, model: run.model.name };
  const model = formatModelRef(ref);
  let now: number | undefined;
  try {
    if (run.model.requestedVersion !== null) {
      const snapshot = await requireRunFile(ctx.storage, runFiles.describe(run.folder), describeSnapshotSchema, ctx.signal);
      if (modelFacts(snapshot, { ...ref, version: pinned }).active !== true) return [];
    }
    now = await activeVersion(ctx.client, ref, { signal: ctx.signal, log: ctx.log });
  } catch (err) {
    if (ctx.signal?.aborted) throw err;
    const what = `could not ask whether model ${model} got another active version during the run: ${err instanceof Error ? err.message : String(err)}`;
    ctx.log.warn({ err }, what);
    return [what];
  }
  if (now === undefined || now === pinned) return [];
  const what = `model ${model} got a new active version during the run: version ${now} is active now; the run stayed pinned to version ${pinned}, active when it started, and every row is version ${pinned}'s answer (score again for version ${now}'s)`;
  ctx.log.warn({ model, pinned, active: now }, what);
  return [what];
}

/**
 * A run the server could not pin to a version may have been scored by two models, if one was
 * retrained meanwhile: describe is asked again and compared with the run's snapshot. A change
 * fails the run (E_MODEL_CHANGED), or with `--on-model-change warn` is a manifest warning.
 */
async function checkModelUnchanged(run: PreparedRun, ctx: ModelCheckContext): Promise<string[]> {
  const snapshot = await requireRunFile(ctx.storage, runFiles.describe(run.folder), describeSnapshotSchema, ctx.signal);
  const ref = { project: run.model.project, model: run.model.name };
  const changed = await describeChanges(ctx.client, ref, snapshot, { signal: ctx.signal, log: ctx.log });
  if (changed.length === 0) return [];
  const what = `model ${run.model.requested} changed during the run: describe now differs in ${changed.join(', ')}, and the server reports no versions, so rows may have been scored by either model`;
  if (run.request.options.onModelChange === 'fail') {
    throw new BatchScorerError('E_MODEL_CHANGED', `${what}; score it again (a new --run-id), or pass --on-model-change warn to accept such output`);
  }
  ctx.log.warn(what);
  return [what];
}
