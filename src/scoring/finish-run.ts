import { shellWord } from '../shell-word.js';
import { BatchScorerError, errorCode, type ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { Predictor } from './predictor.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { assembleOutputs } from './assemble.js';
import { stageTable, type StagedTable } from './table-load.js';
import { errorRateExceeded, quarantineAllowance } from './error-allowance.js';
import { keepQuarantinedRows } from './kept-quarantine.js';
import { buildManifest, readManifest, type Manifest, type ManifestParts, type QueueFacts } from './manifest.js';
import { FinishedSegments } from './finished-segments.js';
import { readPreparedRun, runFiles, type PreparedRun } from './prepared-run.js';
import { ownsRunFolder } from './run-folder-claim.js';
import { writeRunFile } from './run-file.js';
import type { SegmentFacts } from './segment-counts.js';
import { removeWorkFiles } from './work-files.js';
import { namedBaseline, type FindBaseline } from './drift-baseline.js';
import { computeDrift, type Drift } from './drift.js';
import { comparisonSummary } from './model-comparison.js';
import { modelChangeWarnings } from './model-change.js';
import { openAttemptNumber } from './run-attempt.js';
import { formatModelRef } from '../service/index.js';
import type { PredictionProfile } from './prediction-profile.js';

/** What ending a run needs besides the run: storage, the service (to describe the model again), a logger. */
export interface FinishContext {
  storage: Storage;
  client: Predictor;
  log: Logger;
  signal?: AbortSignal;
  /** Where the run's drift is measured from; by default only the run its options name (`baselineRun`). */
  findBaseline?: FindBaseline;
}

/**
 * Ends a run whose segments are all done: checks the quarantined share and what became of the
 * model meanwhile (see modelChangeWarnings); joins the outputs and the segments' prediction
 * profiles, measures the drift from a baseline run (see FindBaseline), writes manifest.json and
 * then `_SUCCESS`, last, and removes the `_work` area. A run writing into a table (--out-table)
 * stages its rows and publishes them with its manifest in one transaction before writing its own
 * (see table-load.ts). A drift past `driftFail` fails the run (E_DRIFT) with its outputs and
 * manifest written but no `_SUCCESS`: `accept` can still accept it.
 */
export async function finishRun(
  run: PreparedRun,
  facts: {
    startedAt: string;
    /** When scoring began (this attempt's): planning may go on after it (see startRun). */
    plannedAt: number;
    /** When planning ended, where it went on while segments were scored. */
    planEndAt?: number;
    /** The segments' done markers as handed in while they were scored (see FinishedSegments); read here when absent. */
    finished?: FinishedSegments;
    queue?: (segments: Partial<SegmentFacts>[]) => QueueFacts;
    /** The attempt this is (see run-attempt.ts); read from the run folder when absent. */
    attempt?: number;
  },
  ctx: FinishContext,
): Promise<Manifest> {
  const scoredAt = Date.now();
  const { storage, log, signal } = ctx;
  const finished = await (facts.finished ?? new FinishedSegments(storage, run)).all();
  const { counts } = finished;
  // Segments stop once the run is past its allowance; a run resumed with a lower one (its
  // finished segments past it already, none left to score) is caught here.
  if (counts.rowsQuarantined > quarantineAllowance(run.input.rows, run.request.options.maxErrorRate)) throw errorRateExceeded(run, counts);
  const warnings = await modelChangeWarnings(run, ctx);
  const { warning } = finished.profile;
  if (warning) {
    log.warn(warning);
    warnings.push(warning);
  }
  // A run writing into a table stages its rows first, and publishes them once its manifest is known.
  const table = run.output.tableColumns ? await stageTable(storage, run, finished.done, log, signal) : undefined;
  try {
    return await finishOutputs(run, facts, ctx, { finished, warnings, scoredAt, table });
  } finally {
    await table?.end();
  }
}

/**
 * The rest of finishRun, once the model and the error allowance are checked (and a table run's
 * rows staged): outputs, drift, comparison, the manifest, the table's publish, then `_SUCCESS`.
 */
async function finishOutputs(
  run: PreparedRun,
  facts: Parameters<typeof finishRun>[1],
  ctx: FinishContext,
  {
    finished,
    warnings,
    scoredAt,
    table,
  }: { finished: Awaited<ReturnType<FinishedSegments['all']>>; warnings: string[]; scoredAt: number; table?: StagedTable },
): Promise<Manifest> {
  const { storage, log, signal } = ctx;
  const { folder } = run;
  const { counts } = finished;
  const { profile } = finished.profile;
  const outputs = await assembleOutputs(storage, run, finished, signal);
  const drift = profile ? await measureDrift(run, profile, ctx, warnings) : null;
  const comparison = run.compare && finished.comparison?.summary(modelName(run.model), modelName(run.compare));
  if (comparison) await writeRunFile(storage, runFiles.comparison(folder), comparison, { pretty: true, signal });
  const moved = drift?.level === 'fail' ? driftError(drift, run) : undefined;
  if (counts.unechoedRows > 0) {
    warnings.push(`${counts.unechoedRows} answer rows carried no row id (${run.model.rowIdMember ?? 'none sent'}): those were aligned by position alone`);
  }
  const manifest = buildManifest({
    runId: run.runId,
    startedAt: facts.startedAt,
    attempt: facts.attempt ?? (await openAttemptNumber(storage, folder, signal)),
    run,
    counts,
    rowChecksums: finished.done.map((d) => d.sha256),
    profile,
    outputs,
    timings: {
      planMs: facts.plannedAt - Date.parse(facts.startedAt),
      scoreMs: scoredAt - facts.plannedAt,
      assembleMs: Date.now() - scoredAt,
      ...(facts.planEndAt !== undefined && { planEndMs: facts.planEndAt - Date.parse(facts.startedAt) }),
    },
    concurrency: { asked: run.request.options.concurrency ?? null, settled: median(finished.done.flatMap((d) => (d.slots === undefined ? [] : [d.slots]))) },
    warnings,
    drift,
    ...(comparison && { comparison: comparisonSummary(comparison) }),
    error: moved,
    queue: facts.queue?.(finished.done),
    ...(table && { table: table.summary }),
  });
  // The table's _SUCCESS: its rows and the run's record, committed together, before the run folder's.
  if (table && !moved) await table.publish(manifest);
  await writeRunFile(storage, runFiles.manifest(folder), manifest, { pretty: true, signal });
  if (!moved) await storage.write(runFiles.success(folder), '', { signal });
  // The outputs are complete from here on (a drifted run's wait only for acceptance); leftover parts are litter, not a failure.
  await removeWorkFiles(storage, run, finished.done).catch((err: unknown) => {
    log.warn({ err, folder: formatLocation(folder) }, 'could not remove the files of _work; they may be deleted by hand');
  });
  if (moved) throw moved;
  return manifest;
}

/**
 * The run's drift from its baseline, or null without one. A baseline the run named that cannot be
 * compared with is a warning, never a failure: the outputs are good either way.
 */
async function measureDrift(run: PreparedRun, profile: PredictionProfile, ctx: FinishContext, warnings: string[]): Promise<Drift | null> {
  const find = ctx.findBaseline ?? namedBaseline(ctx.storage);
  const baseline = await find(run, ctx.signal);
  if (baseline === null) return null;
  if (typeof baseline === 'string') {
    ctx.log.warn(baseline);
    warnings.push(`drift not measured: ${baseline}`);
    return null;
  }
  const { driftWarn, driftFail } = run.request.options;
  const drift = computeDrift(profile, baseline, { warn: driftWarn, fail: driftFail ?? null });
  if (drift.level !== 'ok') ctx.log.warn({ baseline: baseline.runId, moved: drift.moved, level: drift.level }, 'the run drifted from its baseline');
  return drift;
}

/** E_DRIFT naming the columns past `fail`, with their PSI, and the commands that judge the held run. */
function driftError(drift: Drift, run: PreparedRun): BatchScorerError {
  const failed = drift.columns.filter((c) => c.level === 'fail').sort((a, b) => b.psi - a.psi);
  const named = failed.slice(0, 5).map((c) => `${c.column} (PSI ${c.psi.toFixed(3)})`);
  const more = failed.length > 5 ? ` and ${failed.length - 5} more` : '';
  return new BatchScorerError(
    'E_DRIFT',
    `the run drifted from baseline run ${drift.baseline.runId} past --drift-fail ${drift.thresholds.fail}: ${named.join(', ')}${more}; it is held, its outputs written without _SUCCESS: if the change is expected, batch-scorer accept ${run.runId} --out ${shellWord(run.request.out)} --why '<reason>'; if not, batch-scorer reject ${run.runId} --out ${shellWord(run.request.out)}`,
  );
}

/** A model as resolved for the run, as comparisons name it: `project/name.version`. */
export function modelName(model: { project: string; name: string; resolvedVersion: number | null }): string {
  return formatModelRef({ project: model.project, model: model.name, version: model.resolvedVersion ?? undefined });
}

/** The middle value (the lower of the two middle ones), or null for none. */
function median(values: number[]): number | null {
  if (values.length === 0) return null;
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
}

/**
 * What `preflight` and the deployment policy refuse: nothing was asked or written yet, so there is
 * no run to record or resume.
 */
const REFUSED_BEFORE_START: readonly ErrorCode[] = ['E_USAGE', 'E_INPUT_NOT_FOUND', 'E_OUTPUT', 'E_NOT_ALLOWED'];

/** Failures whose manifest finishRun wrote itself, with the outputs and the drift: not replaced by a shorter one. */
const RECORDED_AT_FINISH: readonly ErrorCode[] = ['E_DRIFT'];

/**
 * Failures over a run folder that is not this run's to write or resume: its run id is another
 * run's or one that succeeded, its run is held for a judgement (E_RUN_CONFLICT), or its files are
 * another release's or damaged.
 */
export const NOT_THIS_RUNS: readonly ErrorCode[] = ['E_RUN_EXISTS', 'E_RUN_CONFLICT', 'E_RUN_STATE'];

/**
 * Records a failed, cancelled (E_CANCELLED) or expired (E_EXPIRED) attempt: a manifest that says
 * why, and never `_SUCCESS`. `_work` stays, so the same run id resumes from the segments that
 * finished. Only in the run's own folder (see run-folder-claim.ts), never over a succeeded run's
 * manifest, nor another run's. Best effort: a failure to write it is logged, and the original
 * error stays the one reported; unrecorded, the attempt is not told to end (it stays open, and
 * its resume ends it). A run that failed on its error threshold also gets errors.jsonl
 * (see keepQuarantinedRows), listed in its manifest's outputs, and counts that agree with it;
 * `onQuarantined` hears each segment's rows in it (queue mode sets its progress from them) and
 * must not throw.
 * @returns the manifest of the attempt's end; undefined for a request that never became a run of
 *   this folder (refused before it claimed it, or the folder is another run's or one that
 *   succeeded): it has no lifecycle, and nothing is told of it; undefined too when the manifest
 *   could not be written
 */
export async function recordFailure(
  storage: Storage,
  folder: Location,
  parts: ManifestParts,
  log: Logger,
  options: {
    /** Hears each segment's quarantined rows, as errors.jsonl keeps them. */
    onQuarantined?: (bySegment: readonly number[]) => Promise<void>;
    /**
     * The run's lifecycle had begun: this process opened its attempt (see openAttempt), or the run
     * was queued (a queued run exists from its enqueue on). Its end is then told even where
     * nothing could be written (refused before it claimed its folder, a claim withdrawn), save
     * over another run's folder or one that succeeded.
     */
    begun?: boolean;
  } = {},
): Promise<Manifest | undefined> {
  let manifest = buildManifest({ ...parts, folder });
  let quarantined: number[] | undefined;
  try {
    // A run id taken by another request, or a run folder this release cannot read: its manifest is not ours to replace.
    const code = parts.error && errorCode(parts.error);
    if (code !== undefined && NOT_THIS_RUNS.includes(code)) return undefined;
    // Its listeners hear the manifest finishRun wrote, with its drift.
    if (code !== undefined && RECORDED_AT_FINISH.includes(code)) return (await readManifest(storage, folder).catch(() => undefined)) ?? manifest;
    // A request refused before it started (preflight's refusals) leaves no run folder behind, nor
    // changes the manifest of the run it would have resumed.
    if (!parts.run && code !== undefined && REFUSED_BEFORE_START.includes(code)) return options.begun ? manifest : undefined;
    // A folder never claimed (the run stopped before), or found to be another's, is not written in.
    if (!(await ownsRunFolder(storage, folder, parts.runId))) return options.begun ? manifest : undefined;
    if (await storage.exists(runFiles.success(folder))) return undefined;
    const attempt = parts.attempt ?? (await openAttemptNumber(storage, folder));
    manifest = buildManifest({ ...parts, folder, attempt });
    // No attempt is open (a resumed run cancelled before a worker took it): the manifest of the
    // last one, which openAttemptNumber read, stays its record; the run's end is told, of no
    // attempt, as for a run refused before it began one.
    if (attempt === 0) return options.begun ? manifest : undefined;
    // Planned by an earlier attempt, the run is that plan's even when this attempt stopped before reading it.
    const run = parts.run ?? (await readPreparedRun(storage, folder).catch(() => undefined));
    if (run !== parts.run) manifest = buildManifest({ ...parts, folder, run, attempt: manifest.attempt });
    if (run && code === 'E_ERROR_RATE') {
      const kept = await keepQuarantinedRows(storage, run);
      // Its message counts the rows errors.jsonl holds, now that every segment has stopped.
      const error = errorRateExceeded(run, kept.counts);
      manifest = buildManifest({ ...parts, folder, run, attempt: manifest.attempt, counts: kept.counts, outputs: [kept.file], error });
      quarantined = kept.bySegment;
    }
    await writeRunFile(storage, runFiles.manifest(folder), manifest, { pretty: true });
  } catch (err) {
    // Unrecorded, the attempt stays open: its resume goes on with it and ends it, once.
    log.error({ err }, 'could not write the failed run manifest: its end is not told');
    return undefined;
  }
  if (quarantined) await options.onQuarantined?.(quarantined);
  return manifest;
}
