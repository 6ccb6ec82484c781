import pLimit from 'p-limit';
import {
  checkOutputDatabase,
  type DeploymentPolicy,
  type Limits,
  parseRunOptions,
  processConcurrency,
  type RunOptions,
  type RunOptionsInput,
} from '../config/index.js';
import { BatchScorerError, errorCode, errorMessage, RunFolderError, UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import { maxConcurrency } from '../service/index.js';
import { shellWord } from '../shell-word.js';
import { formatLocation, type Location, parseLocation, type Storage } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { describeChanges, describeSnapshotSchema, modelFacts, takeDescribeSnapshot } from './describe-snapshot.js';
import { MemoryErrorAllowance } from './error-allowance.js';
import { recordFailure } from './finish-run.js';
import { buildManifest, type Manifest, type OutputFile } from './manifest.js';
import { modelChangeWarnings } from './model-change.js';
import { listedFile, readPatchedRun, type PatchedRun } from './patched-run.js';
import { refusedRows, writePatchedErrors } from './patched-errors.js';
import type { InputPlan } from './plan.js';
import type { OwnPredictor, Predictor, PredictorFactory } from './predictor.js';
import { runFiles, runModelSchema, type PreparedRun } from './prepared-run.js';
import { rescorePublisher, type RescoredRows } from './rescore-publish.js';
import { checkPatchedTable, finishPublishedVersion, patchedTableTarget } from './rescore-table.js';
import { planRowsToSend, rowsSource, type RowReading, type RowsToSend } from './rescore-rows.js';
import { openAttempt } from './run-attempt.js';
import { claimRunFolder } from './run-folder-claim.js';
import { requireRunFile, writeRunFile } from './run-file.js';
import type { RunRequest } from './run-request.js';
import { processWork } from './score-run.js';
import { scoreSegment } from './score-segment.js';
import { addCounts, emptyCounts, sumCounts, type SegmentCounts } from './segment-counts.js';
import type { SegmentDone } from './segment-done.js';
import { removeWorkFiles } from './work-files.js';

/** What `rescore` is asked: the run to patch, where its rows come from, and the new version's id and options. */
export interface RescoreRequest {
  /** The finished run patched: `<out>/<runId>/`. */
  runId: string;
  /** Where run folders are: the patched run's, and the new version's beside it. */
  out: string;
  /** The corrected copy of errors.jsonl (`--rows`); absent: every row the model refused, sent again as it was. */
  rows?: string;
  /** The new version's run id; absent: `<runId>.rescore-1`, `-2`, ..., the first whose folder is free. */
  newRunId?: string;
  /** Options taking other values than the patched run's: where the service is, and how the rows are sent. */
  options?: Pick<RunOptionsInput, 'service' | 'onModelChange' | 'concurrency'>;
}

/** What a rescore needs besides its request, as `score` does (see DirectRunContext). */
export interface RescoreContext {
  storage: Storage;
  log: Logger;
  predictorFor: PredictorFactory;
  limits: Limits;
  signal?: AbortSignal;
  /** Called once the new version has claimed its folder, with its run id: a failure is recorded there from then on. */
  onClaimed?: (runId: string) => void;
  /** The deployment's policy: a run that wrote into a table is patched only where OUTPUT_ROOTS allows its database; unset: anywhere. */
  policy?: DeploymentPolicy;
}

/** Run ids a default rescore id is looked for among: `<runId>.rescore-1` up to this. */
const RESCORE_IDS = 1000;

/**
 * Patches a finished run (see readPatchedRun): sends again the rows it quarantined, as they were or
 * as `rows` corrected them (see planRowsToSend), with the run's own options, pinned model version
 * and layout, through the same segments, batches, answer checks and writer as a run, and writes a
 * new version of the run's outputs into a run folder of its own (`<out>/<newRunId>/`): the run's
 * outputs with the rows scored now at their places (see PublishRescored), an errors.jsonl of the
 * rows still quarantined, the run's describe.json, and a manifest naming the run it patched
 * (`patches`), then `_SUCCESS`. The patched run's folder is only read. A run that wrote into a
 * table has the rows scored now added to that table instead, once (see rescore-table.ts); a retry
 * of a version whose publish committed finishes its folder, sending nothing. A run that read a
 * database is patched without reading it: its rows are errors.jsonl's typed values, sent and
 * written as its segments sent and wrote the rows they read (see correctedDatabaseRow). A request refused
 * (the run, its files, the rows file, the table) is refused before anything is sent or written.
 */
export async function rescoreRun(request: RescoreRequest, ctx: RescoreContext): Promise<Manifest> {
  const { storage, signal } = ctx;
  const startedAt = new Date().toISOString();
  const patched = await readPatchedRun(storage, runFiles.folder(request.out, request.runId), request.runId, signal);
  const options = rescoreOptions(patched, request);
  const target = patchedTableTarget(patched, options);
  if (target && ctx.policy) checkOutputDatabase(ctx.policy, target.database);
  const reading: RowReading = { patched, options, limits: ctx.limits };
  const rowsName = request.rows === undefined ? formatLocation(listedFile(patched.folder, patched.errors)) : `--rows ${excerpt(request.rows)}`;
  const rowsAt = request.rows === undefined ? listedFile(patched.folder, patched.errors) : parseLocation(request.rows);
  const toSend = await planRowsToSend(storage, rowsAt, rowsName, reading, signal);
  if (toSend.rows.length === 0) throw nothingToSend(patched, toSend, request.rows !== undefined);
  const runId = request.newRunId ?? (await freeRunId(storage, request.out, patched.runId, signal));
  const folder = runFiles.folder(request.out, runId);
  if (target) {
    // What the table's rows are, and whether this version was published already, is known before anything is sent.
    const rescore = { target, patched, version: { runId, folder } };
    const published = await checkPatchedTable(storage, rescore, signal);
    if (published) return await finishPublishedVersion(storage, rescore, published, signal);
  }
  const runRequest: RunRequest = {
    input: patched.manifest.input.location,
    model: patched.manifest.model.requested,
    out: request.out,
    options: { ...options, runId },
    trigger: { kind: 'cli', command: 'rescore' },
  };
  await claimNewFolder(storage, folder, runId, runRequest, signal);
  ctx.onClaimed?.(runId);
  const log = ctx.log.child({ runId, patches: patched.runId });
  const own = ctx.predictorFor(runRequest.options, maxConcurrency(processConcurrency(options)), log);
  let run: PreparedRun | undefined;
  try {
    await openAttempt(storage, folder, startedAt, signal);
    run = preparedVersion(patched, runRequest, folder, toSend, own);
    const warnings = await startVersion(storage, patched, run, own, log, signal);
    return await scoreVersion({ ...ctx, log }, { patched, run, toSend, reading, client: own, startedAt, rowsName, warnings });
  } catch (err) {
    await recordFailure(storage, folder, { runId, startedAt, attempt: 1, run, request: runRequest, error: err as Error }, log, { begun: true });
    throw err;
  } finally {
    await own.close();
  }
}

/** The patched run's options, as the new version runs with them: its run id aside, and what the request sets instead. */
function rescoreOptions(patched: PatchedRun, request: RescoreRequest): RunOptions {
  const { runId: _patchedId, ...stored } = patched.manifest.options;
  return parseRunOptions({ ...stored, ...request.options }, 'rescore', 'flags');
}

/** Why there is nothing to send: no quarantined row, no line, or only malformed rows left as they were. */
function nothingToSend(patched: PatchedRun, toSend: RowsToSend, given: boolean): UsageError {
  if (patched.quarantined.rows.length === 0) return new UsageError(`run ${patched.runId} quarantined no rows: there is nothing to rescore`);
  if (given && toSend.read === 0) return new UsageError(`${toSend.name} holds no line: keep the lines of the rows to send, as errors.jsonl has them`);
  return new UsageError(
    given
      ? `${toSend.name}: every line is a row quarantined as malformed and left as it was: correct their "input" (a malformed row is never sent as it was)`
      : `run ${patched.runId} quarantined only malformed rows, which cannot be read as they are: correct them in a copy of its errors.jsonl and pass it with --rows`,
  );
}

/** `<root>.rescore-N` for the first N whose folder is free, the root being the patched run's id less any `.rescore-N` of its own. */
async function freeRunId(storage: Storage, out: string, patchedId: string, signal?: AbortSignal): Promise<string> {
  const root = /^(.*)\.rescore-\d+$/.exec(patchedId)?.[1] ?? patchedId;
  for (let n = 1; n <= RESCORE_IDS; n++) {
    const id = `${root}.rescore-${n}`;
    if (id.length > 128) throw new UsageError(`the rescore's run id ${excerpt(id)} would be longer than 128 characters: name one with --run-id`);
    if (await storage.isEmpty(runFiles.folder(out, id), signal)) return id;
  }
  throw new UsageError(`${root}.rescore-1 to -${RESCORE_IDS} are all taken in ${out}: name the rescore's run with --run-id`);
}

/** Claims the new version's folder, which must be new: a rescore is not resumed, but done again under another id. */
async function claimNewFolder(storage: Storage, folder: Location, runId: string, request: RunRequest, signal?: AbortSignal): Promise<void> {
  const taken = () =>
    new BatchScorerError('E_RUN_EXISTS', `${formatLocation(folder)} exists already: a rescore writes a new run folder; choose another --run-id`);
  if (!(await storage.isEmpty(folder, signal))) throw taken();
  // Another rescore of this id made its claim first: its folder.
  if ((await claimRunFolder(storage, folder, runId, request, signal)) !== undefined) throw taken();
}

/**
 * The new version's run: the patched run's model (pinned to its version), columns, schema and
 * layout, and for input the rows sent (see versionInput).
 */
function preparedVersion(patched: PatchedRun, request: RunRequest, folder: Location, toSend: RowsToSend, client: Predictor): PreparedRun {
  const { manifest, layout } = patched;
  const model = runModelSchema.safeParse(manifest.model);
  if (!model.success) throw new RunFolderError(`the manifest of ${formatLocation(patched.folder)} names its model only as asked: was it edited?`);
  const input = versionInput(patched, request, toSend);
  return {
    runId: request.options.runId!,
    folder,
    createdAt: new Date().toISOString(),
    request,
    input,
    model: { ...model.data, rowIdMember: model.data.rowIdMember ?? null },
    service: client.displayUrl,
    sent: layout.sent,
    schema: layout.schema,
    outputFormat: layout.outputFormat,
    output: layout.output,
    warnings: [],
  };
}

/**
 * The new version's input plan: the rows sent, a segment per input file that has some (see
 * RowsToSend), so that a row refused again names its file and line as it did. A run over a
 * database has one such segment of the rows sent, each at its place in the key order; the version
 * reads nothing from the database (its rows are the lines sent), so its plan has no key bounds
 * and no declared columns (those the out-table takes are in the layout already).
 */
function versionInput(patched: PatchedRun, request: RunRequest, toSend: RowsToSend): InputPlan {
  const { manifest, layout } = patched;
  if (layout.syntax === 'postgresql') {
    const { table, query } = request.options;
    return {
      syntax: 'postgresql',
      location: manifest.input.location,
      ...(query === undefined ? { table: manifest.database?.table ?? table } : { query }),
      key: manifest.database?.key ?? '',
      columns: layout.columns,
      types: layout.types ?? {},
      databaseColumns: [],
      rows: toSend.rows.length,
      segments: toSend.segments.map((s) => ({ index: s.index, firstRow: s.firstRow, rows: s.rows, firstLine: toSend.rows[s.firstRow], from: null, to: null })),
    };
  }
  const syntax = layout.syntax;
  const sentIn = (file: number) => toSend.segments.filter((s) => s.file === file).reduce((n, s) => n + s.rows, 0);
  return {
    location: manifest.input.location,
    files: manifest.inputs.map((file, i) => ({
      location: parseLocation(file.location),
      info: { size: file.size ?? 0, ...(file.etag !== null && { etag: file.etag }) },
      sha256: file.sha256,
      syntax: file.format === 'csv' || file.format === 'jsonl' || file.format === 'parquet' ? file.format : syntax,
      gzip: file.gzip ?? false,
      columns: layout.fileColumns?.[i] ?? layout.columns,
      rows: sentIn(i),
    })),
    syntax,
    columns: layout.columns,
    rows: toSend.rows.length,
    segments: toSend.segments,
  };
}

/**
 * Before any row is sent: the patched run's describe.json becomes the version's, and the model is
 * asked as a run asks it. Pinned to a version, that version must still be there and ready; on a
 * server without versions, describe must answer as it did for the run, or the model changed since:
 * E_MODEL_CHANGED, or with `--on-model-change warn` a warning (answered, for the manifest).
 */
async function startVersion(storage: Storage, patched: PatchedRun, run: PreparedRun, client: Predictor, log: Logger, signal?: AbortSignal): Promise<string[]> {
  const snapshot = await requireRunFile(storage, runFiles.describe(patched.folder), describeSnapshotSchema, signal);
  await storage.write(runFiles.describe(run.folder), await storage.readText(runFiles.describe(patched.folder), signal), { signal });
  const ref = { project: run.model.project, model: run.model.name };
  if (run.model.resolvedVersion !== null) {
    const pinned = { ...ref, version: run.model.resolvedVersion };
    modelFacts(await takeDescribeSnapshot(client, pinned, { signal, log }), pinned);
    return [];
  }
  const changed = await describeChanges(client, ref, snapshot, { signal, log });
  if (changed.length === 0) return [];
  const what = `model ${run.model.requested} changed since run ${patched.runId}: describe now differs in ${changed.join(', ')}, and the server reports no versions, so the rows rescored may be another model's answers`;
  if (run.request.options.onModelChange === 'fail') {
    throw new BatchScorerError('E_MODEL_CHANGED', `${what}; score the corrected input again, or pass --on-model-change warn to patch the run anyway`);
  }
  log.warn(what);
  return [what];
}

/** What scoring a new version needs: the patched run, the version's run, the rows to send, the client. */
interface Version {
  patched: PatchedRun;
  run: PreparedRun;
  toSend: RowsToSend;
  reading: RowReading;
  client: OwnPredictor;
  startedAt: string;
  rowsName: string;
  warnings: string[];
}

/** Scores the rows sent into the version's segments, publishes its outputs and errors.jsonl, and finishes it (see finishVersion). */
async function scoreVersion(ctx: RescoreContext, version: Version): Promise<Manifest> {
  const { storage, log, signal } = ctx;
  const { run, toSend, patched, client } = version;
  const plannedAt = Date.now();
  const work = processWork(run, {
    storage,
    client,
    // The version quarantines at most the rows the patched run did, within its allowance.
    errorAllowance: new MemoryErrorAllowance(Infinity),
    log,
    ...(signal && { signal, stopSignal: signal }),
    rows: rowsSource(storage, toSend, version.reading),
  });
  const segments = pLimit(run.request.options.segmentsAtOnce);
  const done = await Promise.all(run.input.segments.map((s) => segments(() => scoreSegment(work, s.index))));
  const scoredAt = Date.now();
  const errorParts = run.input.segments.map((s) => runFiles.segmentErrors(run.folder, s.index));
  const refused = new Set<number>();
  for await (const { row } of refusedRows(storage, errorParts, signal)) refused.add(row);
  const parts: RescoredRows['parts'] = toSend.segments.map((s) => ({
    location: runFiles.segmentPart(run.folder, s.index, run.outputFormat),
    file: s.file,
    rows: toSend.rows.slice(s.firstRow, s.firstRow + s.rows).filter((row) => !refused.has(row)),
  }));
  const outputs = await rescorePublisher(run)({ storage, patched, run, parts, done, log, ...(signal && { signal }) });
  const { table } = outputs;
  let manifest: ReturnType<typeof versionManifest>;
  try {
    const errors = await writePatchedErrors(storage, patched, run.folder, toSend.rows, refusedRows(storage, errorParts, signal), signal);
    const warnings = [...version.warnings, ...(await modelChangeWarnings(run, { storage, client, log, ...(signal && { signal }) }))];
    const timings = { planMs: plannedAt - Date.parse(version.startedAt), scoreMs: scoredAt - plannedAt, assembleMs: Date.now() - scoredAt };
    const facts = { done, outputs: [...outputs.files, errors], table: table?.summary, warnings, timings, concurrency: work.slots.concurrency };
    manifest = versionManifest(version, facts);
    // The table's _SUCCESS: the version's rows and its record, committed together, before its run folder's.
    await table?.publish(manifest);
  } catch (err) {
    await table?.discard().catch(() => undefined);
    throw err;
  } finally {
    await table?.end();
  }
  await finishFolder(storage, run, manifest, signal).catch((err: unknown) => {
    if (!table) throw err;
    const finish = `batch-scorer rescore ${shellWord(patched.runId)} --out ${shellWord(run.request.out)} --run-id ${shellWord(run.runId)}`;
    throw new BatchScorerError(errorCode(err), `${errorMessage(err)}; the rows are in ${table.summary.table} already: finish the run folder with ${finish}`, {
      cause: err,
    });
  });
  await removeWorkFiles(storage, run, done).catch((err: unknown) => {
    log.warn({ err, folder: formatLocation(run.folder) }, 'could not remove the files of _work; they may be deleted by hand');
  });
  log.info({ sent: toSend.rows.length, scored: manifest.patches.counts.rowsScored, refused: refused.size, folder: manifest.folder }, 'rescore succeeded');
  return manifest;
}

/** Writes a version's manifest.json, then `_SUCCESS`. */
async function finishFolder(storage: Storage, run: PreparedRun, manifest: Manifest, signal?: AbortSignal): Promise<void> {
  await writeRunFile(storage, runFiles.manifest(run.folder), manifest, { pretty: true, signal });
  await storage.write(runFiles.success(run.folder), '', { signal });
}

/**
 * The version's manifest: the patched run's (input, model, options, layout, warnings), its counts
 * as if the rows scored now had been scored the first time (requests and retries added up), its
 * outputs, and what it patched (`patches`). Its profile is not kept: a finished run keeps its
 * profile's summary only, which cannot take rows as a run's segments' profiles do, and a profile
 * that left the rows out, or guessed them in, would mislead drift and comparisons.
 */
function versionManifest(
  version: Version,
  facts: {
    done: SegmentDone[];
    outputs: OutputFile[];
    /** For a run that wrote into a table: where the version's rows go, and how many (those it scored). */
    table: Manifest['table'];
    warnings: string[];
    timings: NonNullable<Manifest['timings']>;
    concurrency: number;
  },
): Manifest & { patches: NonNullable<Manifest['patches']> } {
  const { patched, run } = version;
  const rescore = emptyCounts();
  for (const d of facts.done) addCounts(rescore, d);
  // The rows stay the run's, the rows scored now moved from quarantined to scored; what sending them took is added.
  const { segments, ...before } = patched.manifest.counts;
  const counts: SegmentCounts & { segments: number } = { ...sumCounts([before, { ...rescore, rowsIn: 0, rowsScored: 0, rowsQuarantined: 0 }]), segments };
  counts.rowsScored += rescore.rowsScored;
  counts.rowsQuarantined -= rescore.rowsScored;
  // A version's files hold every row scored; a table holds the run's rows already, and takes the version's.
  const [written, scored] = facts.table
    ? [facts.table.rows, rescore.rowsScored]
    : [facts.outputs.filter((o) => o.file !== 'errors.jsonl').reduce((n, o) => n + o.rows, 0), counts.rowsScored];
  if (written !== scored) throw new RunFolderError(`run ${run.runId} wrote ${written} output rows where it counts ${scored} scored`);
  const profile = `no prediction profile: run ${run.runId} patches run ${patched.runId}, whose manifest keeps its profile's summary only, which cannot take the rows rescored`;
  const comparison = patched.manifest.comparison
    ? [
        `no comparison.json: the rows rescored were not sent to ${String(run.request.options.compareModel)}; the patched run's comparison.json compares its own rows`,
      ]
    : [];
  const built = buildManifest({
    runId: run.runId,
    startedAt: version.startedAt,
    attempt: 1,
    run,
    counts,
    profile: null,
    outputs: facts.outputs,
    timings: facts.timings,
    concurrency: { asked: run.request.options.concurrency ?? null, settled: facts.concurrency },
    warnings: [...patched.manifest.warnings, ...facts.warnings, profile, ...comparison],
    table: facts.table,
  });
  return {
    ...built,
    input: patched.manifest.input,
    inputs: patched.manifest.inputs,
    // A database's rows, key ranges and checksums are those the patched run read.
    ...(patched.manifest.database && { database: patched.manifest.database }),
    layout: patched.layout,
    patches: { runId: patched.runId, folder: formatLocation(patched.folder), rows: version.rowsName, counts: rescore },
  };
}
