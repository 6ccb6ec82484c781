import { isDeepStrictEqual } from 'node:util';
import { BatchScorerError, errorCode, InputError, UsageError } from '../errors.js';
import { ROW_NUMBER_COLUMN } from '../formats/row-writer.js';
import type { Logger } from '../log.js';
import type { RunOptions } from '../config/run-options.js';
import type { ServiceClient } from '../service/client.js';
import { formatModelRef, parseModelRef, type ModelRef } from '../service/model-ref.js';
import { ServiceError } from '../service/service-error.js';
import { formatLocation, parseLocation, type Location } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import { checkColumns, type ColumnPlan } from './column-check.js';
import { keptColumns, outputFormat, planOutputLayout } from './output-layout.js';
import { modelFacts, takeDescribeSnapshot, type DescribeSnapshot } from './describe-snapshot.js';
import { outputGroups } from './assemble.js';
import { requestDifference, withNeutralOptions, type RunRequest } from './run-request.js';
import { writeRunFile } from './run-state.js';
import { buildOutputSchema, predictionMembers, targetsFromAnswer } from './output-schema.js';
import { planInput, type InputPlan, type PlanOptions } from './plan.js';
import { readPreparedRun, runFiles, writePreparedRun, type PreparedRun } from './prepared-run.js';
import { echoesRowId, RequestEncoder } from './request-row.js';
import { readSegment } from './read-segment.js';
import { claimRunFolder, refusedWhilePlanning, withdrawClaim } from './run-folder-claim.js';

export interface PrepareContext {
  storage: Storage;
  client: ServiceClient;
  log: Logger;
  signal?: AbortSignal;
  /** Called once the run folder is known to be this run's and to ask what it asked, before the run writes in it. */
  onClaimed?: () => void;
}

/** A new run id: sortable by time, unique enough across machines. */
export function newRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${Math.random().toString(16).slice(2, 8)}`;
}

/**
 * Starts a run, or finds it started: claims its folder (see claimRunFolder), takes the describe
 * snapshot, pins the model version, plans the input, checks its columns, and fixes the output
 * columns, all before any row is scored. A run id whose `_work/run.json` exists with the same
 * request resumes as it began; one whose planning failed before is planned again, for the same
 * request only.
 */
export async function prepareRun(request: RunRequest, runId: string, ctx: PrepareContext): Promise<PreparedRun> {
  const { storage, log, signal } = ctx;
  const folder = runFiles.folder(request.out, runId);
  const claimed = await claimRunFolder(storage, folder, runId, request, signal);
  if (await storage.exists(runFiles.success(folder))) {
    throw new BatchScorerError('E_RUN_EXISTS', `run ${runId} already succeeded in ${formatLocation(folder)}; choose another --run-id`);
  }
  const existing = await readPreparedRun(storage, folder, signal);
  const stored = existing?.request ?? claimed;
  if (stored) refuseOtherOutput(runId, folder, stored, request);
  ctx.onClaimed?.();
  if (existing) return resume(existing, request, ctx);
  const run = await planRun(request, runId, ctx, {
    keepSnapshot: (snapshot) => writeRunFile(storage, runFiles.describe(folder), snapshot, { pretty: true, signal }),
    stage: (file) => runFiles.stagedInput(folder, file),
  }).catch(async (err: unknown) => {
    // Refused while planning, a run this call claimed leaves no folder (see refusedWhilePlanning).
    if (claimed === undefined && refusedWhilePlanning(errorCode(err))) {
      await withdrawClaim(storage, folder).catch((cleanup: unknown) =>
        log.warn({ err: cleanup, folder: formatLocation(folder) }, 'could not withdraw the run folder claim'),
      );
    }
    throw err;
  });
  await writePreparedRun(storage, run, signal);
  log.info(
    {
      rows: run.input.rows,
      files: run.input.files.length,
      segments: run.input.segments.length,
      model: run.model.requested,
      rowIdMember: run.model.rowIdMember,
    },
    'run planned',
  );
  for (const warning of run.warnings) log.warn(warning);
  return run;
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
  const { storage, client, signal, log } = ctx;
  const folder = runFiles.folder(request.out, runId);
  const requested = parseModelRef(request.model);
  const snapshot = await takeDescribeSnapshot(client, requested, { signal, log });
  const facts = modelFacts(snapshot, requested);
  if (facts.timeSeries) {
    throw new BatchScorerError(
      'E_ALIGNMENT',
      `model ${request.model} is a time-series model (describe's TRAINING_OPTIONS has timeseries_settings): it answers a forecast horizon, not one row per input row, so it cannot be scored row by row`,
    );
  }
  const model: ModelRef = { ...requested, version: requested.version ?? facts.version };

  const input = await planInput(storage, parseLocation(request.input), {
    ...planOptions(request.options),
    ...(writes.stage && { stage: writes.stage }),
    signal,
  });
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
  // Refused now, not at assembly: two inputs whose per-file outputs would have one name.
  outputGroups(run);
  // Kept once the run is known to be able to start: a run whose planning fails keeps only its claim (and staged copies).
  await writes.keepSnapshot?.(snapshot);
  return run;
}

/** How the input is planned, from the run's options. */
export function planOptions(options: RunOptions): Omit<PlanOptions, 'stage' | 'signal'> {
  const { segmentRows, limit, delimiter, quote, encoding } = options;
  return { segmentRows, ...(limit !== undefined && { limit }), ...(delimiter !== undefined && { delimiter }), quote, encoding };
}

/**
 * The run's columns against the model's inputs (see checkColumns), and each file's where files
 * differ (JSON Lines): a file with none of the model's inputs is refused, naming it.
 */
export function checkInputColumns(input: InputPlan, inputs: readonly string[] | undefined, strict: boolean): ColumnPlan {
  const plan = checkColumns(input.columns, inputs, strict, input.location);
  for (const file of input.files) if (file.columns.length !== input.columns.length) checkColumns(file.columns, inputs, strict, file.location);
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
