import { DEFAULT_LIMITS, type Limits, parseRunInput, type RunOptions } from '../config/index.js';
import { isDeepStrictEqual } from 'node:util';
import { BatchScorerError, errorCode, InputError, UsageError } from '../errors.js';
import { ROW_NUMBER_COLUMN } from '../formats/index.js';
import type { Logger } from '../log.js';
import type { Predictor } from './predictor.js';
import { formatModelRef, type ModelRef, parseModelRef, ServiceError } from '../service/index.js';
import { formatLocation, type Location, parseLocation, type Storage } from '../storage/index.js';
import { checkColumns, type ColumnPlan } from './column-check.js';
import { keptColumns, outputFormat, planOutputLayout } from './output-layout.js';
import { indentedSnapshot, modelFacts, takeDescribeSnapshot, type DescribeSnapshot } from './describe-snapshot.js';
import { outputGroups } from './assemble.js';
import { checkTableTarget } from './table-load.js';
import { requestDifference, withNeutralOptions, type RunRequest } from './run-request.js';
import { writeRunFile } from './run-file.js';
import { buildOutputSchema, predictionMembers, targetsFromAnswer, type OutputSchema } from './output-schema.js';
import { rowBounds } from './input-bounds.js';
import { type FilesInputPlan, planInput, planningGoesOn, type InputPlan, type PlanOptions } from './plan.js';
import { readPreparedRun, runFiles, writePreparedRun, type PreparedRun } from './prepared-run.js';
import { SegmentFeed } from './segment-feed.js';
import { planDatabase } from './database-plan.js';
import { echoesRowId, RequestEncoder } from './request-row.js';
import { readSegment } from './read-segment.js';
import { readManifest } from './manifest.js';
import { requireNext } from './run-lifecycle.js';
import { claimRunFolder, refusedWhilePlanning, withdrawClaim } from './run-folder-claim.js';

export interface PrepareContext {
  storage: Storage;
  client: Predictor;
  log: Logger;
  signal?: AbortSignal;
  /** The deployment's bounds on sizes peers control (see LIMITS); DEFAULT_LIMITS when absent. */
  limits?: Limits;
  /** Hears the input bytes planning reads (see PlanOptions.onBytes): what it throws stops planning. */
  onInputBytes?: (bytes: number) => void;
  /** Called once the run folder is known to be this run's and to ask what it asked, before the run writes in it. */
  onClaimed?: () => Promise<void> | void;
}

/** A new run id: sortable by time, unique enough across machines. */
export function newRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${Math.random().toString(16).slice(2, 8)}`;
}

/** A run started or found started (see startRun), to be scored while its planning goes on. */
export interface StartedRun {
  /** The run: its `input` grows while planning goes on, and is the whole plan once `planned` has resolved. */
  run: PreparedRun;
  /** The segments to score, each once it can be read; ends once the whole plan is in run.json, or throws planning's error. */
  segments: SegmentFeed;
  /** Resolves once the whole plan is in run.json (it rejects as `segments` throws). */
  planned: Promise<void>;
  /** Whether the run was started before: some of its segments may be done. */
  resumed: boolean;
}

/**
 * Starts a run, or finds it started: claims its folder (see claimRunFolder), takes the describe
 * snapshot, pins the model version, plans the input, checks its columns, and fixes the output
 * columns, all before any row is scored. A run id whose `_work/run.json` exists with the same
 * request resumes as it began; one whose planning failed before is planned again, for the same
 * request only. Waits for the whole plan (see startRun).
 */
export async function prepareRun(request: RunRequest, runId: string, ctx: PrepareContext): Promise<PreparedRun> {
  const started = await startRun(request, runId, ctx);
  await started.planned;
  return started.run;
}

/**
 * As prepareRun, but returns once the first segment can be scored: planning an input that can be
 * read as it is planned (see PlanOptions.onSegment) goes on meanwhile, and run.json holds the plan
 * so far (`input.planning`) until it has the whole plan. A run stopped before its planning ended
 * plans its input again from its stored facts (see planAgain).
 */
export async function startRun(request: RunRequest, runId: string, ctx: PrepareContext): Promise<StartedRun> {
  const { storage, log, signal } = ctx;
  const folder = runFiles.folder(request.out, runId);
  const claimed = await claimRunFolder(storage, folder, runId, request, signal);
  if (await storage.exists(runFiles.success(folder))) {
    throw new BatchScorerError('E_RUN_EXISTS', `run ${runId} already succeeded in ${formatLocation(folder)}; choose another --run-id`);
  }
  // A held run waits for a judgement: scoring it again would meet its gate again.
  const ended = await readManifest(storage, folder, signal);
  if (ended?.state === 'held') requireNext(runId, ended.state, 'resume', `resumed (its outputs in ${formatLocation(folder)} wait for it)`);
  // A rejected run failed for good: its `_work` is gone, so scoring it again would start another run over its judged outputs.
  if (ended?.rejected) {
    throw new BatchScorerError(
      'E_RUN_CONFLICT',
      `run ${runId} was rejected by ${ended.rejected.by} at ${ended.rejected.at}: it failed for good; choose another --run-id`,
    );
  }
  const existing = await readPreparedRun(storage, folder, signal);
  const stored = existing?.request ?? claimed;
  if (stored) refuseOtherOutput(runId, folder, stored, request);
  await ctx.onClaimed?.();
  const segments = new SegmentFeed();
  if (existing) {
    const run = await resume(existing, request, ctx);
    const { input } = run;
    if (!planningGoesOn(input)) segments.end(input.segments.length);
    const planned = planningGoesOn(input) ? planAgain(run, input, ctx, segments) : Promise.resolve();
    planned.catch(() => undefined); // Heard through `segments` by a run that scores.
    return { run, segments, planned, resumed: true };
  }
  const { run, whole, readOn, stop } = await beginRun(
    request,
    runId,
    ctx,
    {
      keepSnapshot: (snapshot) => writeRunFile(storage, runFiles.describe(folder), snapshot, { pretty: indentedSnapshot(snapshot), signal }),
      stage: (file) => runFiles.stagedInput(folder, file),
    },
    segments,
  ).catch(async (err: unknown) => {
    // Refused while planning, a run this call claimed leaves no folder (see refusedWhilePlanning).
    if (claimed === undefined && refusedWhilePlanning(errorCode(err))) {
      await withdrawClaim(storage, folder).catch((cleanup: unknown) =>
        log.warn({ err: cleanup, folder: formatLocation(folder) }, 'could not withdraw the run folder claim'),
      );
    }
    throw err;
  });
  // Stored before any segment is scored: segments without run.json would be a run's lost state.
  await writePreparedRun(storage, run, signal).catch(async (err: unknown) => {
    stop();
    await whole.catch(() => undefined);
    throw err;
  });
  readOn();
  const planned = planningGoesOn(run.input) ? whole.then((input) => storeWholePlan(run, input, ctx, segments)) : Promise.resolve(planEnded(run, log, segments));
  planned.catch((err: unknown) => segments.fail(err));
  return { run, segments, planned, resumed: false };
}

/** Planning ended: the run has its whole plan (in run.json already), and every segment can be scored. */
function planEnded(run: PreparedRun, log: Logger, segments: SegmentFeed): void {
  log.info(
    {
      rows: run.input.rows,
      files: run.input.syntax === 'postgresql' ? 0 : run.input.files.length,
      segments: run.input.segments.length,
      model: run.model.requested,
      rowIdMember: run.model.rowIdMember,
    },
    'run planned',
  );
  for (const warning of run.warnings) log.warn(warning);
  segments.end(run.input.segments.length);
}

/** The whole plan of a run whose scoring began while it was planned: kept in run.json, in place of the plan so far. */
async function storeWholePlan(run: PreparedRun, input: InputPlan, ctx: PrepareContext, segments: SegmentFeed): Promise<void> {
  run.input = input;
  await writePreparedRun(ctx.storage, run, ctx.signal);
  planEnded(run, ctx.log, segments);
}

/**
 * Plans again the input of a run stopped before its planning ended, its segments scored as
 * before while it does: the run's facts (model, columns, output) stay as stored, and the input
 * must come out as it was planned so far (the same file, columns and segments), or it changed
 * since (E_INPUT_CHANGED). The segments stored are released at once.
 */
async function planAgain(run: PreparedRun, stored: FilesInputPlan, ctx: PrepareContext, segments: SegmentFeed): Promise<void> {
  let checked = 0;
  const same = (plan: FilesInputPlan, whole: boolean) => {
    const known = Math.min(plan.segments.length, stored.segments.length);
    for (; checked < known && isDeepStrictEqual(plan.segments[checked], stored.segments[checked]); checked++);
    const fits =
      checked === known &&
      isDeepStrictEqual(plan.files[0].info, stored.files[0].info) &&
      isDeepStrictEqual(plan.columns, stored.columns) &&
      (!whole || (plan.files.length === 1 && known === stored.segments.length));
    if (!fits) {
      throw new InputError(`${stored.location} changed since run ${run.runId} began planning it; score it again with another --run-id`, 'E_INPUT_CHANGED');
    }
  };
  try {
    segments.release(stored.segments.length);
    const input = await planInput(ctx.storage, parseLocation(run.request.input), {
      ...planOptions(run.request.options),
      // Planned again with the bounds it began with, so its rows are what they were.
      limits: ctx.limits ?? DEFAULT_LIMITS,
      ...(stored.rowBounds && { rowBounds: stored.rowBounds }),
      stage: (file) => runFiles.stagedInput(run.folder, file),
      signal: ctx.signal,
      onSegment: (sofar) => {
        same(sofar, false);
        // The segments stored stay the run's until planning has found as many again.
        if (sofar.segments.length >= stored.segments.length) run.input = sofar;
        segments.release(sofar.segments.length);
      },
    });
    same(input, true);
    await storeWholePlan(run, input, ctx, segments);
  } catch (err) {
    segments.fail(err);
    throw err;
  }
}

/** What planning a run may write: the describe snapshot, and UTF-8 copies of inputs in other encodings. A dry run writes neither. */
export interface PlanWrites {
  keepSnapshot?: (snapshot: DescribeSnapshot) => Promise<unknown>;
  stage?: (file: number) => Location;
}

/**
 * Everything a run fixes before its first row is scored: the describe snapshot and version pin,
 * the input's plan, the columns sent and written, the row id member. Writes only what `writes`
 * says, so a dry run plans exactly as a run does and leaves nothing behind.
 */
export async function planRun(request: RunRequest, runId: string, ctx: PrepareContext, writes: PlanWrites = {}): Promise<PreparedRun> {
  return (await beginRun(request, runId, ctx, writes)).run;
}

/**
 * planRun, which with `segments` returns once the first segment can be scored: the run's `input`
 * then grows as planning goes on once `readOn` is called (`stop` ends it), `segments` hears of each
 * segment found, and `whole` resolves to the whole plan (see PlanOptions.onSegment). The input is
 * read while describe is asked.
 */
async function beginRun(
  request: RunRequest,
  runId: string,
  ctx: PrepareContext,
  writes: PlanWrites,
  segments?: SegmentFeed,
): Promise<{ run: PreparedRun; whole: Promise<InputPlan>; readOn: () => void; stop: () => void }> {
  const { storage } = ctx;
  const folder = runFiles.folder(request.out, runId);
  const requested = parseModelRef(request.model);
  // A run refused while its input is read stops the reading.
  const refused = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, refused.signal]) : refused.signal;
  let firstSegment!: (sofar: InputPlan) => void;
  const early = new Promise<InputPlan>((resolve) => (firstSegment = resolve));
  // Planning waits, once it has found the first segment, for the run to have started (see PlanOptions.holdAfterFirst).
  let readOn!: () => void;
  const hold = new Promise<void>((resolve, reject) => {
    readOn = resolve;
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
  hold.catch(() => undefined); // Planning stops with it.

  // A database input is planned whole: its one scan reads the key alone.
  const input = parseRunInput(request.input);
  const whole: Promise<InputPlan> =
    input.kind === 'database'
      ? planDatabase(input.database, { options: request.options, ...(ctx.limits && { limits: ctx.limits }), signal })
      : planInput(storage, input.location, {
          ...runPlanOptions(request.options, ctx.limits),
          ...(writes.stage && { stage: writes.stage }),
          ...(ctx.onInputBytes && { onBytes: ctx.onInputBytes }),
          signal,
          ...(segments && {
            onSegment: (sofar: InputPlan) => {
              firstSegment(sofar);
              segments.release(sofar.segments.length);
            },
            holdAfterFirst: hold,
          }),
        });
  // Awaited once describe has answered (its failure told first), or by the caller once scoring began.
  const firstPlanned = Promise.race([early, whole]);
  for (const planning of [whole, firstPlanned]) planning.catch(() => undefined);
  try {
    const run = await fixRun(request, runId, folder, requested, { ...ctx, signal }, writes, firstPlanned);
    return { run, whole, readOn, stop: () => refused.abort() };
  } catch (err) {
    refused.abort();
    await whole.catch(() => undefined);
    throw err;
  }
}

/** The rest of beginRun, once describe is asked: what the run fixes from the model and the input's first segment. */
async function fixRun(
  request: RunRequest,
  runId: string,
  folder: Location,
  requested: ModelRef,
  ctx: PrepareContext,
  writes: PlanWrites,
  planned: Promise<InputPlan>,
): Promise<PreparedRun> {
  const { client, signal, log } = ctx;
  const snapshot = await takeDescribeSnapshot(client, requested, { signal, log });
  const facts = modelFacts(snapshot, requested);
  if (facts.timeSeries) {
    throw new BatchScorerError(
      'E_ALIGNMENT',
      `model ${request.model} is a time-series model (describe's TRAINING_OPTIONS has timeseries_settings): it answers a forecast horizon, not one row per input row, so it cannot be scored row by row`,
    );
  }
  const model: ModelRef = { ...requested, version: requested.version ?? facts.version };
  const input = await planned;
  const columns = checkInputColumns(input, facts.inputs, request.options.strictColumns);
  const kept = keptColumns(input.columns, request.options, input.location);
  const { answer: probe, rowIdMember, echoed } = await probeAnswer(ctx, input, model, columns.sent, request.options, facts.rowIdMemberHint);
  const targets = facts.outputs ?? targetsFromAnswer(probe);
  if (targets.length === 0) {
    throw new BatchScorerError('E_SERVICE_FATAL', `model ${formatModelRef(model)} names no output columns in describe or predict; cannot tell what to write`);
  }
  const members = predictionMembers(request.options.predictionColumns, request.options.explain);
  const schema = buildOutputSchema(targets, probe, [...(request.options.rowNumber ? [ROW_NUMBER_COLUMN] : []), ...kept], members);
  if (schema.columns.length === 0) {
    throw new UsageError(
      `--prediction-columns ${members.join(',')}: model ${request.model} answers none of them (intervals are for numeric targets only); choose others`,
    );
  }
  const unwritten = schema.targets.filter((t) => t.columns.length === 0).map((t) => t.target);
  if (unwritten.length > 0)
    schema.warnings.push(`--prediction-columns ${members.join(',')} writes nothing of ${unwritten.join(', ')}, which answer no interval`);
  const format = outputFormat(input, request.options);
  const compare = request.options.compareModel === undefined ? undefined : await compareModel(request.options.compareModel, schema, ctx);
  const run: PreparedRun = {
    runId,
    folder,
    createdAt: new Date().toISOString(),
    request,
    input,
    model: {
      requested: request.model,
      project: model.project,
      name: model.model,
      requestedVersion: requested.version ?? null,
      resolvedVersion: model.version ?? null,
      status: facts.status ?? null,
      rowIdMember,
      rowIdEchoed: echoed,
    },
    ...(compare && { compare }),
    service: client.displayUrl,
    sent: columns.sent,
    schema,
    outputFormat: format,
    output: planOutputLayout(input, kept, request.options, format, schema, probe),
    warnings: [
      ...columns.warnings,
      ...schema.warnings,
      ...(model.version === undefined ? ['the server reports no model version: the run is not pinned to one, and describe is compared at its end'] : []),
      ...(echoed
        ? []
        : [
            rowIdMember === null
              ? `the server echoed none of ${ROW_ID_MEMBERS.join(', ')}: answer rows are aligned by position alone`
              : `the server did not echo ${rowIdMember}: answer rows are aligned by position alone`,
          ]),
      ...(request.options.envelope === 'array' && Object.keys(request.options.params).length > 0
        ? ['--param is not sent with --envelope array: a bare array has no room for params']
        : []),
    ],
  };
  // Refused now, not at assembly: two inputs whose per-file outputs would have one name, or a table that does not take the run's columns.
  outputGroups(run);
  if (run.output.tableColumns) await checkTableTarget(run, signal);
  // Kept once the run is known to be able to start: a run whose planning fails keeps only its claim (and staged copies).
  await writes.keepSnapshot?.(snapshot);
  return run;
}

/**
 * The model shadow scoring compares with, pinned to the version describe reports: it must answer
 * every target of the run's model (by name), or there is nothing to compare.
 */
async function compareModel(requested: string, schema: OutputSchema, ctx: PrepareContext): Promise<NonNullable<PreparedRun['compare']>> {
  const ref = parseModelRef(requested);
  const facts = modelFacts(await takeDescribeSnapshot(ctx.client, ref, { signal: ctx.signal, log: ctx.log }), ref);
  const missing = facts.outputs ? schema.targets.map((t) => t.target).filter((t) => !facts.outputs!.includes(t)) : [];
  if (missing.length > 0) {
    throw new UsageError(
      `--compare-model ${requested}: it answers ${facts.outputs!.join(', ') || 'no target'}, not ${missing.join(', ')} as the run's model does; compare models of the same targets`,
    );
  }
  return { requested, project: ref.project, name: ref.model, requestedVersion: ref.version ?? null, resolvedVersion: ref.version ?? facts.version ?? null };
}

/** How the input is planned, from the run's options. */
export function planOptions(options: RunOptions): Omit<PlanOptions, 'stage' | 'signal'> {
  const { segmentRows, limit, delimiter, quote, encoding } = options;
  return { segmentRows, ...(limit !== undefined && { limit }), ...(delimiter !== undefined && { delimiter }), quote, encoding };
}

/** How a new run plans its input: its options, within the deployment's bounds (DEFAULT_LIMITS when absent). */
export function runPlanOptions(options: RunOptions, limits: Limits = DEFAULT_LIMITS): Omit<PlanOptions, 'stage' | 'signal'> {
  return { ...planOptions(options), limits, rowBounds: rowBounds(limits) };
}

/**
 * The run's columns against the model's inputs (see checkColumns), and each file's where files
 * differ (JSON Lines): a file with none of the model's inputs is refused, naming it.
 */
export function checkInputColumns(input: InputPlan, inputs: readonly string[] | undefined, strict: boolean): ColumnPlan {
  const plan = checkColumns(input.columns, inputs, strict, input.location);
  if (input.syntax === 'postgresql') return plan;
  for (const file of input.files) if (file.columns.length !== input.columns.length) checkColumns(file.columns, inputs, strict, formatLocation(file.location));
  return plan;
}

/** The row id members of known servers: the reference server's brand, and the interface document's. */
const ROW_ID_MEMBERS = ['__mindsdb_row_id', '__service_row_id'];

/** A member some other brand of server may echo (`__<brand>_row_id`). */
const ROW_ID_SHAPE = /^__[A-Za-z0-9]+_row_id$/;

/** What one probe answer taught: the members of an answer row, and the row id member it echoed. */
interface Probe {
  answer: Record<string, unknown>;
  /** The member the run sends and checks; null when none is echoed and none was asked for. */
  rowIdMember: string | null;
  /** Whether the server echoed it, so every answer row can be proven by it. */
  echoed: boolean;
}

/**
 * One answer row, to learn which members the model answers (a categorical target has no
 * `_min`/`_max`) and which row id member the server echoes: the probe row carries every candidate
 * member (the one asked for, or with `auto` the known ones, describe's brand first), and the
 * member whose value comes back is the run's. The row is the first data row the engine accepts
 * among the first few, or a row of nulls for a file without data rows.
 */
async function probeAnswer(ctx: PrepareContext, input: InputPlan, model: ModelRef, sent: string[], options: RunOptions, hint?: string): Promise<Probe> {
  const rows: { json: string; id: number }[] = [];
  if (input.segments.length > 0) {
    const encoder = new RequestEncoder(sent, input.syntax === 'csv', undefined);
    for await (const chunk of readSegment(ctx.storage, input, 0, options, ctx.signal)) {
      for (const row of chunk) {
        if (!row.record) continue;
        encoder.encode(row.record, row.index);
        rows.push({ json: encoder.text(), id: row.index });
      }
      if (rows.length >= 5) break;
    }
  }
  if (rows.length === 0) rows.push({ json: JSON.stringify(Object.fromEntries(sent.map((c) => [c, null]))), id: 0 });
  const asked = options.rowIdMember === 'auto' ? [...new Set([...(hint ? [hint] : []), ...ROW_ID_MEMBERS])] : [options.rowIdMember];
  let lastError: unknown;
  for (const row of rows.slice(0, 5)) {
    try {
      const answer = await probeOne(ctx, model, options, row, asked);
      const echoed = asked.find((m) => echoesRowId(answer[m], row.id));
      if (echoed) return { answer, rowIdMember: echoed, echoed: true };
      if (options.rowIdMember !== 'auto') return { answer, rowIdMember: options.rowIdMember, echoed: false };
      // Another brand's server names its member in the answer (null when not sent): ask it once more.
      const other = Object.keys(answer).filter((k) => ROW_ID_SHAPE.test(k) && !asked.includes(k));
      const again = other.length > 0 ? await probeOne(ctx, model, options, row, other) : {};
      const found = other.find((m) => echoesRowId(again[m], row.id));
      return { answer, rowIdMember: found ?? null, echoed: found !== undefined };
    } catch (err) {
      if (!(err instanceof ServiceError && err.kind === 'bad-rows')) throw err;
      lastError = err;
    }
  }
  throw new InputError(`${input.location}: the model failed on each of the first rows; the last said: ${(lastError as Error).message}`);
}

/** One row sent with the given row id members; an answer of another row count is a fault, retried. */
async function probeOne(
  ctx: PrepareContext,
  model: ModelRef,
  options: RunOptions,
  row: { json: string; id: number },
  members: string[],
): Promise<Record<string, unknown>> {
  const ids = members.map((m) => `,${JSON.stringify(m)}:${row.id}`).join('');
  const json = row.json === '{}' ? `{${ids.slice(1)}}` : `${row.json.slice(0, -1)}${ids}}`;
  const [answer] = await ctx.client.predict(model, json, {
    rows: 1,
    envelope: options.envelope,
    params: options.params,
    signal: ctx.signal,
    log: ctx.log,
    check: (rows) => {
      if (rows.length !== 1 || typeof rows[0] !== 'object' || rows[0] === null) {
        throw new ServiceError('bad-answer', `predict ${formatModelRef(model)} answered ${rows.length} rows for 1 sent`);
      }
    },
  });
  return answer;
}

/** A run id asked again must ask for the same output as it began with (the option that differs is named). */
function refuseOtherOutput(runId: string, folder: Location, stored: RunRequest, asked: RunRequest): void {
  const difference = requestDifference(stored, asked);
  if (difference) {
    throw new BatchScorerError(
      'E_RUN_EXISTS',
      `run ${runId} in ${formatLocation(folder)} was started for another output: this asks ${difference}; resume it as it began, or choose another --run-id`,
    );
  }
}

/**
 * Resumes a prepared run asking for the same output: options that do not change the output bytes
 * take their new values (stored again, so every worker sees them).
 */
async function resume(existing: PreparedRun, request: RunRequest, ctx: PrepareContext): Promise<PreparedRun> {
  ctx.log.info('resuming run');
  const updated = withNeutralOptions(existing.request, request.options);
  if (isDeepStrictEqual(updated, existing.request)) return existing;
  const run = { ...existing, request: updated };
  await writePreparedRun(ctx.storage, run, ctx.signal);
  return run;
}
