import { z } from 'zod';
import type { Limits } from '../config/index.js';
import { BatchScorerError, RunFolderError } from '../errors.js';
import { type InputRow, ROW_NUMBER_COLUMN } from '../formats/index.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { computeDrift, driftSchema, type DriftThresholds } from './drift.js';
import { modelName } from './finish-run.js';
import { readManifest, succeededManifestSchema, type Manifest } from './manifest.js';
import { ComparisonAccumulator, comparisonSchema, type Comparison } from './model-comparison.js';
import { readOutputRows } from './output-rows.js';
import type { OutputSchema } from './output-schema.js';
import type { PredictionProfile } from './prediction-profile.js';
import { runFiles } from './prepared-run.js';

/** What runs of different inputs are held to: columns past a PSI of 0.1 are listed as moved; nothing fails. */
export const COMPARE_THRESHOLDS: DriftThresholds = { warn: 0.1, fail: null };

/** One of the two runs compared: its id, folder and model as resolved. */
const comparedRunSchema = z.object({ runId: z.string(), folder: z.string(), model: z.string() });

/**
 * Two finished runs compared (`batch-scorer compare`). `rows`: both scored the same input, so
 * their outputs are compared row by row, as shadow scoring compares two models (`model` is run
 * A's, `other` run B's). `profile`: they did not (`why` says how they differ), so B's prediction
 * profile is compared with A's as a drift from a baseline is, the largest PSI first.
 */
export const runComparisonSchema = z.discriminatedUnion('mode', [
  comparisonSchema.extend({ mode: z.literal('rows'), runs: z.object({ a: comparedRunSchema, b: comparedRunSchema }) }),
  z.object({
    mode: z.literal('profile'),
    model: z.string(),
    other: z.string(),
    runs: z.object({ a: comparedRunSchema, b: comparedRunSchema }),
    why: z.string(),
    drift: driftSchema,
  }),
]);
export type RunComparison = z.output<typeof runComparisonSchema>;

/** A run that succeeded, as compare reads it. */
interface SucceededRun {
  /** `A` or `B`, as errors name it. */
  which: string;
  runId: string;
  folder: Location;
  manifest: z.output<typeof succeededManifestSchema>;
  profile: PredictionProfile;
}

/** Compares run B (folder `b`) with run A (folder `a`); both must have succeeded. Outputs are read within `limits` (default DEFAULT_LIMITS). */
export async function compareRuns(storage: Storage, a: Location, b: Location, signal?: AbortSignal, limits?: Limits): Promise<RunComparison> {
  const runA = await readSucceededRun(storage, a, 'A', signal);
  const runB = await readSucceededRun(storage, b, 'B', signal);
  const runs = { a: shown(runA), b: shown(runB) };
  const why = differentInputs(runA, runB);
  if (why === undefined) return { mode: 'rows', ...(await compareRows(storage, runA, runB, signal, limits)), runs };
  const baseline = { runId: runA.runId, finishedAt: runA.manifest.finishedAt, chosen: 'named' as const, profile: runA.profile };
  const drift = computeDrift(runB.profile, baseline, COMPARE_THRESHOLDS);
  // Stable: columns of one PSI keep the profile's order (targets, then inputs).
  drift.columns.sort((x, y) => y.psi - x.psi);
  return { mode: 'profile', model: runs.a.model, other: runs.b.model, runs, why, drift };
}

function shown(run: SucceededRun): RunComparison['runs']['a'] {
  return { runId: run.runId, folder: formatLocation(run.folder), model: modelName(run.manifest.model) };
}

/** The run in `folder`, refused (E_RUN_CONFLICT, naming it as A or B) unless it succeeded: its manifest says so and its `_SUCCESS` is there. */
async function readSucceededRun(storage: Storage, folder: Location, which: string, signal?: AbortSignal): Promise<SucceededRun> {
  const where = formatLocation(folder);
  const manifest = await readManifest(storage, folder, signal);
  if (!manifest) throw refused(`run ${which}: there is no manifest.json in ${where}: the run has not finished there, or never ran`);
  const runId = manifest.runId;
  if (manifest.state !== 'succeeded') {
    const how = manifest.state === 'failed' ? `failed with ${manifest.error?.code ?? 'no error code'}` : `is ${manifest.state}`;
    throw refused(`run ${which} (${runId}) ${how}; only runs that succeeded are compared`);
  }
  if (!(await storage.exists(runFiles.success(folder), signal)))
    throw refused(`run ${which} (${runId}) has no _SUCCESS in ${where}; only runs that succeeded are compared`);
  const parsed = succeededManifestSchema.safeParse(manifest);
  if (!parsed.success)
    throw new RunFolderError(`run ${which} (${runId}): ${where}/manifest.json cannot be read as a succeeded run's (${parsed.error.issues[0].message})`);
  if (!manifest.profile) throw refused(`run ${which} (${runId}) has no prediction profile (its release kept none): it cannot be compared`);
  return { which, runId, folder, manifest: parsed.data, profile: manifest.profile };
}

function refused(message: string): BatchScorerError {
  return new BatchScorerError('E_RUN_CONFLICT', message);
}

/**
 * Why two runs' outputs cannot be matched row by row, or undefined when they can: output files
 * (not a table, see --out-table) of the same input files (by sha256, in order), as many output rows, and rows that line up (no row quarantined in
 * either, or `row_number` in both to check it).
 */
function differentInputs(a: SucceededRun, b: SucceededRun): string | undefined {
  // Its rows are in a table, which compare does not read: the profiles say what they came to.
  const tabled = [a, b].find((run) => run.manifest.table);
  if (tabled) return `run ${tabled.which} wrote its rows into the table ${tabled.manifest.table!.table}, which is not read back: compared by profile`;
  const hashes = (m: Manifest) => (m.inputs.length > 0 ? m.inputs.map((f) => f.sha256) : [m.input.sha256]);
  for (const run of [a, b]) {
    if (hashes(run.manifest).includes(null))
      return `run ${run.which}'s input has no sha256 (it was scored with --limit): the inputs cannot be known to be the same`;
  }
  if (hashes(a.manifest).join(',') !== hashes(b.manifest).join(',')) return 'the runs scored different inputs (their sha256 differ)';
  const [rowsA, rowsB] = [outputRows(a.manifest), outputRows(b.manifest)];
  if (rowsA !== rowsB) return `run A wrote ${rowsA} rows and run B ${rowsB}: their rows cannot be matched`;
  const quarantined = [a, b].some((r) => (r.manifest.counts?.rowsQuarantined ?? 0) > 0);
  if (quarantined && !(a.manifest.options.rowNumber && b.manifest.options.rowNumber)) {
    return 'rows were quarantined and the outputs have no row_number to match the rest by';
  }
  return undefined;
}

function outputRows(manifest: Manifest): number {
  return manifest.outputs.reduce((n, o) => n + o.rows, 0);
}

/** Where a target's values are in each run's rows, and whether they are numbers. */
interface ComparedTarget {
  target: string;
  a: { column: string; numeric: boolean };
  b: { column: string; numeric: boolean };
}

/** Both runs' outputs streamed side by side, their rows matched by position, into a ComparisonAccumulator. */
async function compareRows(storage: Storage, a: SucceededRun, b: SucceededRun, signal?: AbortSignal, limits?: Limits): Promise<Comparison> {
  const targets: ComparedTarget[] = a.profile.targets.flatMap((ta) => {
    const tb = b.profile.targets.find((t) => t.target === ta.target);
    return tb
      ? [{ target: ta.target, a: { column: ta.column, numeric: ta.kind === 'numeric' }, b: { column: tb.column, numeric: tb.kind === 'numeric' } }]
      : [];
  });
  // Every prediction column of A (a target's column and its suffixed ones) is left out of the input shown.
  const predictionColumns = a.profile.targets.map((t) => t.column);
  const isPrediction = (key: string) => key === ROW_NUMBER_COLUMN || predictionColumns.some((c) => key === c || key.startsWith(`${c}_`));
  const rowsB = new RowCursor(readOutputRows(storage, b.folder, b.manifest.outputs, b.manifest.options.outputEncoding, signal, limits));
  let accumulator: ComparisonAccumulator | undefined;
  let intervals: boolean[] = [];
  let position = 0;
  try {
    for await (const chunk of readOutputRows(storage, a.folder, a.manifest.outputs, a.manifest.options.outputEncoding, signal, limits)) {
      for (const recordA of chunk) {
        const recordB = await rowsB.next();
        if (recordB === undefined) throw new RunFolderError(`run B's outputs end before run A's, at row ${position + 1}: were they changed after the run?`);
        if (!accumulator) {
          // Whether a target has an interval is seen in A's columns: its first row has them all.
          intervals = targets.map((t) => `${t.a.column}_min` in recordA && `${t.a.column}_max` in recordA);
          accumulator = new ComparisonAccumulator(comparedSchema(targets, intervals));
        }
        const row: InputRow = { index: rowIndex(recordA, recordB, position), line: position + 2, record: inputRecord(recordA, isPrediction) };
        const predictions = targets.flatMap((t, i) => ends(recordA, t.a, intervals[i]));
        const other = targets.flatMap((t, i) => ends(recordB, t.b, intervals[i]));
        accumulator.add(row, predictions, other);
        position++;
      }
    }
    if ((await rowsB.next()) !== undefined)
      throw new RunFolderError(`run B's outputs have more rows than run A's ${position}: were they changed after the run?`);
  } finally {
    await rowsB.close();
  }
  accumulator ??= new ComparisonAccumulator(comparedSchema(targets, []));
  return accumulator.summary(modelName(a.manifest.model), modelName(b.manifest.model));
}

/**
 * The output schema the accumulator reads both runs' values through: per target compared, its
 * value and, with an interval, its `_min` and `_max` (the order `ends` gives them in).
 */
function comparedSchema(targets: readonly ComparedTarget[], intervals: readonly boolean[]): OutputSchema {
  const schemas = targets.map((t, i) => {
    const members = intervals[i] ? [t.target, `${t.target}_min`, `${t.target}_max`] : [t.target];
    return { target: t.target, interval: intervals[i] === true, columns: members.map((member) => ({ member, column: member })) };
  });
  return { targets: schemas, columns: schemas.flatMap((s) => s.columns.map((c) => c.column)), warnings: [] };
}

/** A target's value, and its interval's ends when compared, as the accumulator takes them. */
function ends(record: Record<string, unknown>, at: ComparedTarget['a'], interval: boolean | undefined): unknown[] {
  const value = (column: string) => valueOf(record[column], at.numeric);
  return interval ? [value(at.column), value(`${at.column}_min`), value(`${at.column}_max`)] : [value(at.column)];
}

/** A value as the model answered it: CSV's text of a number as the number, an empty field as none. */
function valueOf(value: unknown, numeric: boolean): unknown {
  if (value === undefined || value === null || value === '') return null;
  if (numeric && typeof value === 'string') {
    const number = Number(value);
    return Number.isFinite(number) ? number : value;
  }
  return value;
}

/** The row's 0-based place in the input: from `row_number` where the outputs have it (checked to be the same in both), else its position. */
function rowIndex(a: Record<string, unknown>, b: Record<string, unknown>, position: number): number {
  if (!(ROW_NUMBER_COLUMN in a)) return position;
  const [numberA, numberB] = [Number(a[ROW_NUMBER_COLUMN]), Number(b[ROW_NUMBER_COLUMN])];
  if (ROW_NUMBER_COLUMN in b && numberA !== numberB) {
    throw refused(`row ${position + 1} of the outputs is input row ${numberA} in run A and ${numberB} in run B: the runs quarantined different rows`);
  }
  return Number.isInteger(numberA) && numberA >= 1 ? numberA - 1 : position;
}

/** A's row without its predictions and row number: the input columns it carried, shown beside a differing row. */
function inputRecord(record: Record<string, unknown>, isPrediction: (key: string) => boolean): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key of Object.keys(record)) if (!isPrediction(key)) kept[key] = record[key];
  return kept;
}

/** One row at a time from chunks of rows. */
class RowCursor {
  private chunk: Record<string, unknown>[] = [];
  private at = 0;

  constructor(private readonly chunks: AsyncGenerator<Record<string, unknown>[]>) {}

  async next(): Promise<Record<string, unknown> | undefined> {
    while (this.at >= this.chunk.length) {
      const next = await this.chunks.next();
      if (next.done) return undefined;
      [this.chunk, this.at] = [next.value, 0];
    }
    return this.chunk[this.at++];
  }

  /** Stops reading (closes the file being read). */
  async close(): Promise<void> {
    await this.chunks.return(undefined);
  }
}
