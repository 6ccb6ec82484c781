import { createHash } from 'node:crypto';
import { z } from 'zod';
import { runOptionsSchema } from '../config/index.js';
import { errorCode, errorMessage, type BatchScorerError } from '../errors.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { TOOL } from '../version.js';
import { endingState, endingStateSchema } from './run-lifecycle.js';
import { driftSchema, type Drift } from './drift.js';
import { comparisonSummarySchema, type ComparisonSummary } from './model-comparison.js';
import { predictionProfileSchema, type PredictionProfile } from './prediction-profile.js';
import type { DatabaseInputPlan } from './database-plan.js';
import type { InputFilePlan, InputPlan } from './plan.js';
import { excerpt } from '../text-excerpt.js';
import { runFiles, runModelSchema, type PreparedRun } from './prepared-run.js';
import { capReachedSchema, ExpiredError } from './run-caps.js';
import { readRunFile } from './run-file.js';
import { runTriggerSchema, type RunTrigger } from './run-trigger.js';
import { segmentCountsSchema, type SegmentCounts } from './segment-counts.js';
import { runLayout, runLayoutSchema } from './run-layout.js';

/**
 * What a run version written by `rescore` patched: the finished run whose quarantined rows it sent
 * again, where the rows sent came from (that run's errors.jsonl, or the corrected copy `--rows`
 * named), and what sending them counted: `rowsIn` rows sent, `rowsScored` of them scored (now in
 * the outputs), `rowsQuarantined` refused again; requests and retries of the rescore alone. The
 * manifest's own counts are the version's: the patched run's, the rows scored moved across.
 */
export const patchSchema = z.object({
  runId: z.string(),
  folder: z.string(),
  rows: z.string(),
  counts: segmentCountsSchema,
});
export type Patch = z.output<typeof patchSchema>;

/** One file of the run folder, as the manifest lists it. */
const outputFileSchema = z.object({ file: z.string(), location: z.string(), rows: z.int().min(0), bytes: z.int().min(0), sha256: z.string() });
export type OutputFile = z.output<typeof outputFileSchema>;

/** Where a run writing into a table (--out-table) put its rows: the database, the table, the runs table recording it, and the rows. */
const tableOutputSchema = z.object({ database: z.string(), table: z.string(), runsTable: z.string(), rows: z.int().min(0) });

/** An input file as the manifest lists it: where, which version (ETag, or size and mtime), its sha256 and rows. */
const inputFileSchema = z.object({
  location: z.string(),
  etag: z.string().nullable(),
  size: z.number().nullable(),
  mtime: z.string().nullable(),
  sha256: z.string().nullable(),
  rows: z.number().nullable(),
  format: z.string().nullable(),
  gzip: z.boolean().nullable(),
});
type ManifestInput = z.output<typeof inputFileSchema>;

/**
 * A database input as the manifest records it: the database (never a password), the table or the
 * query (its beginning, when long), the key column, each segment's key range, rows and sha256 of
 * the rows read, and the sha256 of those sha256s in segment order: the same rows give the same
 * checksums whatever workers read them. A bound is the key's value as the server writes it.
 */
const manifestDatabaseSchema = z.object({
  url: z.string(),
  table: z.string().nullable(),
  query: z.string().nullable(),
  key: z.string(),
  segments: z.array(z.object({ from: z.string().nullable(), to: z.string().nullable(), rows: z.int().min(0), sha256: z.string().nullable() })),
  /** sha256 of each segment's sha256 and a line feed, in segment order; null unless every segment was read. */
  sha256: z.string().nullable(),
});

/** Who judged a held run, when, why, and the error it was held on. */
const judgementSchema = z.object({
  by: z.string(),
  at: z.string(),
  why: z.string().optional(),
  error: z.object({ code: z.string(), message: z.string() }),
});

/** Facts about the queue when a run was scored by workers (absent in direct mode). */
const queueFactsSchema = z.object({ jobIds: z.array(z.string()), attempts: z.int().min(1), workers: z.array(z.string()) });
export type QueueFacts = z.output<typeof queueFactsSchema>;

/** manifest.json: enough to explain a run and to run it again the same way. */
export const manifestSchema = z.object({
  runId: z.string(),
  /** The run folder, `<out>/<runId>`; null in manifests of releases that wrote one for a run that failed before it was prepared. */
  folder: z.string().nullable(),
  /**
   * How the attempt ended (see run-lifecycle.ts): `cancelled`: stopped on request (E_CANCELLED);
   * `expired`: stopped on a cap (E_EXPIRED, see `cap`), both resumable as a failed run is; `held`:
   * its outputs are written but its drift (E_DRIFT) holds back `_SUCCESS` until `accept` (then
   * `succeeded`, see `accepted`) or `reject` (then `failed`, see `rejected`). Manifests of 0.3.0 and
   * earlier say `failed` with E_DRIFT for a held run: readManifest reads them as `held`.
   */
  state: endingStateSchema,
  /**
   * Which attempt of the run this manifest records: 1 for its first start, one more for each
   * resume (see run-attempt.ts); 0 for a queued run that ended before it began one (refused in
   * its worker before it claimed its folder). Absent in manifests of 0.3.0 and earlier (1).
   */
  attempt: z.int().min(0).optional(),
  /** The cap an expired run reached and how far it got (see CapReached); absent otherwise. */
  cap: capReachedSchema.optional(),
  /**
   * False for a run that failed before its plan was made (describe, its input's files, their
   * columns): nothing was scored, and its `_work` holds its claim (and staged copies of inputs planned before). Absent in manifests of
   * releases that kept none, whose runs without a plan have a null `folder`.
   */
  started: z.boolean().optional(),
  startedAt: z.string(),
  finishedAt: z.string(),
  durationMs: z.number(),
  tool: z.object({ name: z.string(), version: z.string() }),
  /** What started the run (see RunTrigger); null in manifests of releases that kept none. */
  trigger: runTriggerSchema.nullable().default(null),
  /** The input as named, with its files' total rows and size; one file's identity when it is one file. */
  input: inputFileSchema,
  /** Every file of the input, in the order its rows were scored; empty for a database input, a run that failed before planning, and in manifests of schema version 1. */
  inputs: z.array(inputFileSchema).default([]),
  /** A database input's table or query, key, segments and checksums (see manifestDatabaseSchema); absent for files. */
  database: manifestDatabaseSchema.optional(),
  /** As resolved at the run's start, or only as asked for a run that failed before that. */
  model: z.union([runModelSchema, z.object({ requested: z.string() })]),
  service: z.string().nullable(),
  options: z.record(z.string(), z.unknown()),
  counts: segmentCountsSchema.extend({ segments: z.int().min(0) }).nullable(),
  /** What the predictions came to (see PredictionProfile); null for a failed run, and in manifests of releases that kept none. */
  profile: predictionProfileSchema.nullable().default(null),
  outputs: z.array(outputFileSchema),
  /** With --out-table: the table its rows were published into (there is no predictions file then); absent otherwise. */
  table: tableOutputSchema.optional(),
  /**
   * Where the run's time went, in ms: describe and planning up to the first segment's scoring,
   * scoring the segments, assembling the outputs (this attempt's, for a resumed run); and, where
   * planning went on while segments were scored (`score`), when it ended, from the run's start.
   * Null for a failed run, and in manifests of releases that kept none.
   */
  timings: z.object({ planMs: z.number(), scoreMs: z.number(), assembleMs: z.number(), planEndMs: z.number().optional() }).nullable().default(null),
  /**
   * --concurrency as asked (null: none, a queued run bounded by its workers alone), and the
   * requests in flight the segments ended with (their median; for `auto`, where it settled). Null
   * for a failed run, and in manifests of releases that kept none.
   */
  concurrency: z
    .object({ asked: z.union([z.int(), z.literal('auto')]).nullable(), settled: z.int().nullable() })
    .nullable()
    .default(null),
  /**
   * The run's profile against a baseline run's (see Drift): for runs started by a pipeline with a
   * previous successful run, or naming `baselineRun`; null otherwise, and in manifests of releases
   * before 0.4.
   */
  drift: driftSchema.nullable().default(null),
  /** Shadow scoring (--compare-model): comparison.json without its rows; absent without it. */
  comparison: comparisonSummarySchema.optional(),
  /** Who accepted a held run (E_DRIFT), when and why (absent when they gave no reason): its `_SUCCESS` was written then. */
  accepted: judgementSchema.optional(),
  /** Who rejected a held run, when and why: it failed for good, its outputs judged wrong. */
  rejected: judgementSchema.optional(),
  warnings: z.array(z.string()),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  queue: queueFactsSchema.optional(),
  /**
   * How the run read and wrote rows (see RunLayout): what `rescore` scores its rows again by.
   * Absent for a run that failed before it was planned, and in manifests of 0.3.0 and earlier.
   */
  layout: runLayoutSchema.optional(),
  /** Set on a run version written by `rescore`: the run it patched, and what rescoring took (see patchSchema). */
  patches: patchSchema.optional(),
});
export type Manifest = z.output<typeof manifestSchema>;

/** The manifest.json of the run folder `folder`, or undefined when it has none (see readRunFile for what is refused). */
export async function readManifest(storage: Storage, folder: Location, signal?: AbortSignal): Promise<Manifest | undefined> {
  const manifest = await readRunFile(storage, runFiles.manifest(folder), manifestSchema, signal);
  return manifest && asThisRelease(manifest);
}

/** A manifest as this release writes them: a run an earlier release recorded as failed on its drift, never judged, is held. */
export function asThisRelease(manifest: Manifest): Manifest {
  const held = manifest.state === 'failed' && manifest.error?.code === 'E_DRIFT' && !manifest.rejected;
  return held ? { ...manifest, state: 'held' } : manifest;
}

/** The manifest of a run that succeeded: its model as resolved and its options as run. */
export const succeededManifestSchema = manifestSchema.extend({ state: z.literal('succeeded'), model: runModelSchema, options: runOptionsSchema });

export interface ManifestParts {
  runId: string;
  startedAt: string;
  /** The attempt (see run-attempt.ts); 0 when absent: none began. */
  attempt?: number;
  /** The prepared run, when the run got that far. */
  run?: PreparedRun;
  /** Where the run's folder is, for runs that failed before being prepared (a prepared run knows its own). */
  folder?: Location;
  /** What was asked, for runs that failed before being prepared. */
  request?: { input: string; model: string; options: Record<string, unknown>; trigger?: RunTrigger };
  counts?: SegmentCounts & { segments: number };
  /** A database input's segments' sha256 of the rows read, in segment order (undefined: not read). */
  rowChecksums?: readonly (string | undefined)[];
  profile?: PredictionProfile | null;
  outputs?: OutputFile[];
  table?: Manifest['table'];
  timings?: Manifest['timings'];
  concurrency?: Manifest['concurrency'];
  drift?: Drift | null;
  comparison?: ComparisonSummary;
  warnings?: string[];
  error?: BatchScorerError | Error;
  queue?: QueueFacts;
}

export function buildManifest(parts: ManifestParts): Manifest {
  const { run } = parts;
  const finishedAt = new Date();
  const input = run?.input;
  const database = input?.syntax === 'postgresql' ? manifestDatabase(input, parts.rowChecksums ?? []) : undefined;
  return {
    runId: parts.runId,
    folder: run ? formatLocation(run.folder) : parts.folder ? formatLocation(parts.folder) : null,
    state: endingState(parts.error && errorCode(parts.error)),
    attempt: parts.attempt ?? 0,
    ...(parts.error instanceof ExpiredError && parts.error.cap && { cap: parts.error.cap }),
    started: run !== undefined,
    startedAt: parts.startedAt,
    finishedAt: finishedAt.toISOString(),
    durationMs: finishedAt.getTime() - Date.parse(parts.startedAt),
    tool: TOOL,
    trigger: run?.request.trigger ?? parts.request?.trigger ?? null,
    input: inputSummary(input, parts.request?.input ?? '', database?.sha256 ?? null),
    inputs: (input === undefined || input.syntax === 'postgresql' ? [] : input.files).map(manifestInput),
    ...(database && { database }),
    model: run?.model ?? { requested: parts.request?.model ?? '' },
    service: run?.service ?? null,
    options: run?.request.options ?? parts.request?.options ?? {},
    counts: parts.counts ?? null,
    profile: parts.profile ?? null,
    outputs: parts.outputs ?? [],
    ...(parts.table && { table: parts.table }),
    timings: parts.timings ?? null,
    concurrency: parts.concurrency ?? null,
    drift: parts.drift ?? null,
    ...(parts.comparison && { comparison: parts.comparison }),
    warnings: [...(run?.warnings ?? []), ...(parts.warnings ?? [])],
    ...(parts.error ? { error: { code: errorCode(parts.error), message: errorMessage(parts.error) } } : {}),
    ...(parts.queue ? { queue: parts.queue } : {}),
    ...(run && { layout: runLayout(run) }),
  };
}

/** A planned file as the manifest lists it. */
function manifestInput(file: InputFilePlan): ManifestInput {
  return {
    location: formatLocation(file.location),
    etag: file.info.etag ?? null,
    size: file.info.size,
    mtime: file.info.mtimeMs !== undefined ? new Date(file.info.mtimeMs).toISOString() : null,
    sha256: file.sha256,
    rows: file.rows,
    format: file.syntax,
    gzip: file.gzip,
  };
}

/**
 * The input as a whole: its one file's identity, or for several files the location as named, their
 * total size and rows (each file's identity is in `inputs`); for a database, its URL, the rows
 * planned and the checksum of the rows read (`rowsSha256`, see manifestDatabaseSchema).
 */
function inputSummary(input: InputPlan | undefined, asked: string, rowsSha256: string | null): ManifestInput {
  if (!input) return { location: asked, etag: null, size: null, mtime: null, sha256: null, rows: null, format: null, gzip: null };
  if (input.syntax === 'postgresql') {
    return { location: input.location, etag: null, size: null, mtime: null, sha256: rowsSha256, rows: input.rows, format: input.syntax, gzip: null };
  }
  if (input.files.length === 1) return { ...manifestInput(input.files[0]), location: input.location };
  return {
    location: input.location,
    etag: null,
    size: input.files.reduce((n, f) => n + f.info.size, 0),
    mtime: null,
    sha256: null,
    rows: input.rows,
    format: input.syntax,
    gzip: input.files.every((f) => f.gzip),
  };
}

/** The bytes of a query the manifest keeps: its beginning; the whole is in the options. */
const QUERY_KEPT_BYTES = 2048;

/** A database input as the manifest records it (see manifestDatabaseSchema), with its segments' checksums as far as they are known. */
function manifestDatabase(input: DatabaseInputPlan, checksums: readonly (string | undefined)[]): z.output<typeof manifestDatabaseSchema> {
  const segments = input.segments.map((s, i) => ({
    from: s.from === null ? null : excerpt(s.from),
    to: s.to === null ? null : excerpt(s.to),
    rows: s.rows,
    sha256: checksums[i] ?? null,
  }));
  const whole = segments.every((s) => s.sha256 !== null);
  return {
    url: input.location,
    table: input.table ?? null,
    query: input.query === undefined ? null : excerpt(input.query, QUERY_KEPT_BYTES),
    key: input.key,
    segments,
    sha256: whole
      ? createHash('sha256')
          .update(segments.map((s) => `${s.sha256}\n`).join(''))
          .digest('hex')
      : null,
  };
}
