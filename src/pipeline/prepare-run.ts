import { isDeepStrictEqual } from 'node:util';
import { BatchScorerError, InputError } from '../errors.js';
import { parseRows } from '../formats/row-parser.js';
import type { Logger } from '../log.js';
import type { RunOptions } from '../config/run-options.js';
import type { ServiceClient } from '../service/client.js';
import { formatModelRef, parseModelRef, type ModelRef } from '../service/model-ref.js';
import { ServiceError } from '../service/service-error.js';
import { formatLocation, parseLocation } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import { checkColumns } from './column-check.js';
import { takeDescribeSnapshot } from './describe-snapshot.js';
import { buildOutputSchema, targetsFromAnswer } from './output-schema.js';
import { planInput, type InputPlan } from './plan.js';
import { readPreparedRun, runFiles, writePreparedRun, type PreparedRun } from './prepared-run.js';
import { encodeRequestRow } from './request-row.js';
import { segmentRows } from './segment-rows.js';

/** What the user asked for: the run's fingerprint. */
export interface RunRequest {
  input: string;
  model: string;
  out: string;
  options: RunOptions;
}

export interface PrepareContext {
  storage: Storage;
  client: ServiceClient;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * Whether two requests ask for the same run: the same input and output locations (however
 * written), model and options; the run id is the key they were found by, not part of the ask.
 */
export function sameRequest(a: RunRequest, b: RunRequest): boolean {
  const fingerprint = (r: RunRequest) =>
    JSON.parse(
      JSON.stringify({
        input: formatLocation(parseLocation(r.input)),
        out: formatLocation(parseLocation(r.out)),
        model: r.model,
        options: { ...r.options, runId: undefined },
      }),
    ) as unknown;
  return isDeepStrictEqual(fingerprint(a), fingerprint(b));
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
 * Starts a run, or finds it started: takes the describe snapshot, pins the model version, plans
 * the input, checks its columns, and fixes the output columns, all before any row is scored.
 * A run id whose `_work/run.json` exists with the same request resumes as it began.
 */
export async function prepareRun(request: RunRequest, runId: string, ctx: PrepareContext): Promise<PreparedRun> {
  const { storage, client, log, signal } = ctx;
  const folder = runFiles.folder(request.out, runId);
  if (await storage.exists(runFiles.success(folder))) {
    throw new BatchScorerError('E_RUN_EXISTS', `run ${runId} already succeeded in ${formatLocation(folder)}; choose another --run-id`, { exitCode: 2 });
  }
  const existing = await readPreparedRun(storage, folder, signal);
  if (existing) {
    if (!sameRequest(existing.request, request)) {
      throw new BatchScorerError(
        'E_RUN_EXISTS',
        `run ${runId} exists in ${formatLocation(folder)} with another input, model or options; choose another --run-id`,
        { exitCode: 2 },
      );
    }
    log.info('resuming run');
    return existing;
  }

  const requested = parseModelRef(request.model);
  const { snapshot, facts } = await takeDescribeSnapshot(client, requested, signal);
  await storage.write(runFiles.describe(folder), `${JSON.stringify(snapshot, null, 2)}\n`, { signal });
  const model: ModelRef = { ...requested, version: requested.version ?? facts.version };

  const input = await planInput(storage, parseLocation(request.input), { segmentRows: request.options.segmentRows, limit: request.options.limit, signal });
  const columns = checkColumns(input.columns, facts.inputs, request.options.strictColumns, input.location);
  const probe = await probeAnswer(ctx, input, model, columns.sent, request.options);
  const targets = facts.outputs ?? targetsFromAnswer(probe);
  if (targets.length === 0) {
    throw new BatchScorerError('E_SERVICE_FATAL', `model ${formatModelRef(model)} names no output columns in describe or predict; cannot tell what to write`);
  }
  const schema = buildOutputSchema(targets, probe, input.columns, request.options.explain);
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
    },
    service: client.displayUrl,
    sent: columns.sent,
    schema,
    outputFormat: request.options.format ?? input.syntax,
    warnings: [
      ...columns.warnings,
      ...schema.warnings,
      ...(model.version === undefined ? ['the server reports no model version: the run is not pinned to one'] : []),
      ...(request.options.envelope === 'array' && Object.keys(request.options.params).length > 0
        ? ['--param is not sent with --envelope array: a bare array has no room for params']
        : []),
    ],
  };
  await writePreparedRun(storage, run, signal);
  log.info({ rows: input.rows, segments: input.segments.length, model: formatModelRef(model) }, 'run planned');
  for (const warning of run.warnings) log.warn(warning);
  return run;
}

/**
 * One answer row, to learn which members the model answers (a categorical target has no
 * `_min`/`_max`): the first data row the engine accepts among the first few, or a row of nulls
 * for a file without data rows.
 */
async function probeAnswer(ctx: PrepareContext, input: InputPlan, model: ModelRef, sent: string[], options: RunOptions): Promise<Record<string, unknown>> {
  const candidates: string[] = [];
  if (input.segments.length > 0) {
    for await (const raw of segmentRows(ctx.storage, input, 0, ctx.signal)) {
      for (const row of parseRows(raw, 0, input.columns, input.syntax)) {
        if (row.record) candidates.push(encodeRequestRow(row.record, sent, input.syntax === 'csv', options.rowIdMember, row.index).json);
      }
      if (candidates.length >= 5) break;
    }
  }
  if (candidates.length === 0) candidates.push(JSON.stringify(Object.fromEntries(sent.map((c) => [c, null]))));
  let lastError: unknown;
  for (const json of candidates.slice(0, 5)) {
    try {
      const [answer] = await ctx.client.predict(model, [json], { envelope: options.envelope, params: options.params, signal: ctx.signal });
      if (answer && typeof answer === 'object') return answer;
      throw new BatchScorerError('E_SERVICE_FATAL', `predict ${formatModelRef(model)} answered no row for one row sent`);
    } catch (err) {
      if (!(err instanceof ServiceError && err.kind === 'bad-rows')) throw err;
      lastError = err;
    }
  }
  throw new InputError(`${input.location}: the model failed on each of the first rows; the last said: ${(lastError as Error).message}`);
}
