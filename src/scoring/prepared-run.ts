import { z } from 'zod';
import { runOptionsSchema } from '../config/index.js';
import { PARQUET_VALUE_TYPES } from '../formats/index.js';
import { formatLocation, holdsFiles, joinLocation, type Location, parseLocation, type Storage, storedLocationSchema } from '../storage/index.js';
import { outputSchemaSchema } from './output-schema.js';
import { inputPlanSchema, storedInputPlan } from './plan.js';
import { runTriggerSchema } from './run-trigger.js';
import { missingRunFile, readRunFile, requireRunFile, writeRunFile } from './run-file.js';
import { inputColumns } from './request-row.js';

/**
 * The model as asked (`project/model[.version]`), and as resolved at the run's start, with the
 * row id member learnt then (null: none, rows aligned by position) and whether the server echoed
 * it, so every answer row must carry it. Runs of 0.1.0 have neither: they sent the member their
 * options named and counted rows without its echo (see preparedRunSchema).
 */
export const runModelSchema = z.object({
  requested: z.string(),
  project: z.string(),
  name: z.string(),
  requestedVersion: z.int().nullable(),
  resolvedVersion: z.int().nullable(),
  status: z.string().nullable(),
  rowIdMember: z.string().nullable().optional(),
  rowIdEchoed: z.boolean().default(false),
});

/** The output formats: the text formats of the inputs, and Parquet. */
export const OUTPUT_FORMATS = ['csv', 'jsonl', 'parquet'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The output's shape besides the predictions, fixed at the run's start. */
export const outputLayoutSchema = z.object({
  /** The input columns written (after --keep-columns and --drop-columns), in input order. */
  inputColumns: z.array(z.string()),
  /** `row_number` first. */
  rowNumber: z.boolean(),
  compress: z.enum(['gzip', 'none']),
  /** Parquet outputs: every output column with its type, in order. */
  parquetColumns: z.array(z.object({ name: z.string(), type: z.enum(PARQUET_VALUE_TYPES) })).optional(),
  /** Runs writing into a table (--out-table): every column with its PostgreSQL type, in order, as the table is made (see planTableColumns). */
  tableColumns: z.array(z.object({ name: z.string(), type: z.string() })).optional(),
});
export type OutputLayout = z.output<typeof outputLayoutSchema>;

/** What the user asked, as stored in the run folder (`_work/claim.json`, `_work/run.json`): a re-used run id must ask the same. */
export const storedRequestSchema = z.object({
  input: z.string(),
  model: z.string(),
  out: z.string(),
  options: runOptionsSchema,
  trigger: runTriggerSchema.optional(),
});

/**
 * Everything fixed at a run's start and shared by all of its segments, wherever they run: stored
 * as `_work/run.json` in the run folder, so a resumed run scores exactly as it began.
 */
const preparedRunSchema = z
  .object({
    runId: z.string(),
    /** The run folder, `<out>/<runId>`: text in run.json, a parsed location once read. */
    folder: storedLocationSchema,
    createdAt: z.string(),
    /** Fingerprint of what the user asked (input, model, options); a re-used run id must match it. */
    request: storedRequestSchema,
    input: inputPlanSchema,
    model: runModelSchema,
    /** The model shadow scoring compares with (`compareModel`), as resolved when the run was planned; absent without one. */
    compare: runModelSchema.pick({ requested: true, project: true, name: true, requestedVersion: true, resolvedVersion: true }).optional(),
    service: z.string(),
    /** Input columns sent to the model, in model order. */
    sent: z.array(z.string()),
    schema: outputSchemaSchema,
    outputFormat: z.enum(OUTPUT_FORMATS),
    /** What the output holds besides the predictions; absent in runs of schema version 1, which wrote every input column uncompressed. */
    output: outputLayoutSchema.optional(),
    warnings: z.array(z.string()),
  })
  // A 0.1.0 run sent the member its options named (never `auto`) and proved rows only where echoed.
  .transform((run) => ({
    ...run,
    model: { ...run.model, rowIdMember: run.model.rowIdMember === undefined ? run.request.options.rowIdMember : run.model.rowIdMember },
    output: run.output ?? { inputColumns: run.input.columns, rowNumber: false, compress: 'none' as const },
  }));
export type PreparedRun = z.output<typeof preparedRunSchema>;

/** The input columns the run sends as members of each row (all it sends but the row id member), in order: what its input profile covers. */
export function sentInputColumns(run: PreparedRun): string[] {
  return inputColumns(run.sent, run.model.rowIdMember ?? undefined);
}

/** Where a run keeps its files: the run folder and its `_work` area (removed once assembled). */
export const runFiles = {
  folder: (out: string, runId: string): Location => runFiles.folderIn(parseLocation(out), runId),
  /** The run folder under an output root already parsed (read from stored text by its schema). */
  folderIn: (out: Location, runId: string): Location => joinLocation(out, runId),
  /** Made first, only where no file is (see run-folder-claim.ts): what makes the folder this run's. */
  claim: (folder: Location) => joinLocation(folder, '_work', 'claim.json'),
  prepared: (folder: Location) => joinLocation(folder, '_work', 'run.json'),
  work: (folder: Location) => joinLocation(folder, '_work'),
  /** The attempt under way (see run-attempt.ts). */
  attempt: (folder: Location) => joinLocation(folder, '_work', 'attempt.json'),
  /** What a run scored by `score` used of its caps by the end of its last attempt (see run-caps.ts). */
  caps: (folder: Location) => joinLocation(folder, '_work', 'caps.json'),
  segmentsFolder: (folder: Location) => joinLocation(folder, '_work', 'segments'),
  /**
   * A segment's scored rows, in the output's text format or, for Parquet, as `values` lines. A
   * segment stopped on a cap and then resumed has more than one piece: piece 0 holds its first
   * rows, each later piece goes on from where the one before stopped (see segment-prefix.ts).
   */
  segmentPart: (folder: Location, index: number, format: OutputFormat, piece = 0) =>
    joinLocation(folder, '_work', 'segments', `${pieceName(index, piece)}.${format === 'parquet' ? 'values.jsonl' : format}`),
  /** UTF-8 copies of input files in other encodings, made when the run is planned. */
  stagedInput: (folder: Location, file: number) => joinLocation(folder, '_work', 'inputs', `${pad(file)}.txt`),
  /** A segment's quarantined rows, a file per piece as its scored rows. */
  segmentErrors: (folder: Location, index: number, piece = 0) => joinLocation(folder, '_work', 'segments', `${pieceName(index, piece)}.errors.jsonl`),
  /** Written last by a segment: its counts, and the proof it finished. */
  segmentDone: (folder: Location, index: number) => joinLocation(folder, '_work', 'segments', `${pad(index)}.done.json`),
  /** Written by a segment stopped on a cap: the rows its pieces hold, for its resume to go on after (see segment-prefix.ts). */
  segmentPrefix: (folder: Location, index: number) => joinLocation(folder, '_work', 'segments', `${pad(index)}.prefix.json`),
  /** An output file of the run folder, by name (`predictions.csv.gz`, `part-00001.jsonl`). */
  output: (folder: Location, name: string) => joinLocation(folder, name),
  errors: (folder: Location) => joinLocation(folder, 'errors.jsonl'),
  describe: (folder: Location) => joinLocation(folder, 'describe.json'),
  /** Shadow scoring's comparison of the run's model with the other (--compare-model). */
  comparison: (folder: Location) => joinLocation(folder, 'comparison.json'),
  manifest: (folder: Location) => joinLocation(folder, 'manifest.json'),
  success: (folder: Location) => joinLocation(folder, '_SUCCESS'),
};

/**
 * A run's `_work/run.json`, or undefined when the run has not been prepared. Segment files without
 * it, in a run that has not succeeded (whose `_work` may be litter), mean it was deleted: planning
 * again could mix two plans or model versions, so that is E_RUN_STATE. Staged inputs without it
 * are a planning that stopped, and are made again.
 */
export async function readPreparedRun(storage: Storage, folder: Location, signal?: AbortSignal): Promise<PreparedRun | undefined> {
  const run = await readRunFile(storage, runFiles.prepared(folder), preparedRunSchema, signal);
  if (run === undefined && (await holdsFiles(storage, runFiles.segmentsFolder(folder), signal)) && !(await storage.exists(runFiles.success(folder), signal))) {
    throw missingRunFile(runFiles.prepared(folder));
  }
  return run;
}

/** The `_work/run.json` of a run that was prepared: workers read it; its absence is E_RUN_STATE. */
export function loadPreparedRun(storage: Storage, folder: Location, signal?: AbortSignal): Promise<PreparedRun> {
  return requireRunFile(storage, runFiles.prepared(folder), preparedRunSchema, signal);
}

/** Stores `_work/run.json`, with its folder and its input files' locations as text. */
export function writePreparedRun(storage: Storage, run: PreparedRun, signal?: AbortSignal): Promise<unknown> {
  const stored: z.input<typeof preparedRunSchema> = { ...run, folder: formatLocation(run.folder), input: storedInputPlan(run.input) };
  return writeRunFile(storage, runFiles.prepared(run.folder), stored, { signal });
}

function pad(index: number): string {
  return String(index).padStart(5, '0');
}

/** A segment's file name for its piece: `00003` for piece 0 (the only one of most segments), `00003.1` after. */
function pieceName(index: number, piece: number): string {
  return piece === 0 ? pad(index) : `${pad(index)}.${piece}`;
}

/** The segment and piece of a file name `runFiles.segmentErrors` makes (`00003.errors.jsonl`, `00003.1.errors.jsonl`); undefined for any other name. */
export function segmentErrorsPiece(name: string): { index: number; piece: number } | undefined {
  const m = /^(\d{5,})(?:\.(\d+))?\.errors\.jsonl$/.exec(name);
  return m ? { index: Number(m[1]), piece: m[2] === undefined ? 0 : Number(m[2]) } : undefined;
}
