import { z } from 'zod';
import { PARQUET_VALUE_TYPES } from '../formats/index.js';
import { outputSchemaSchema } from './output-schema.js';
import { INPUT_SYNTAXES } from './plan.js';
import { OUTPUT_FORMATS, outputLayoutSchema, type PreparedRun } from './prepared-run.js';

/**
 * How a run read and wrote its rows, kept in its manifest once `_work/run.json` is gone: the
 * input's syntax and columns, the columns sent to the model, and the output's format, layout and
 * prediction columns. What `rescore` needs to score rows again exactly as the run did, so that a
 * row scored later is the same bytes as one scored the first time.
 */
export const runLayoutSchema = z.object({
  /** The input's syntax; `postgresql` for a database input. */
  syntax: z.enum([...INPUT_SYNTAXES, 'postgresql']),
  /** The run's input columns (see InputPlan.columns). */
  columns: z.array(z.string()),
  /** Each input file's own columns, in the order of the manifest's `inputs`; absent where every file has the run's columns in its order. */
  fileColumns: z.array(z.array(z.string())).optional(),
  /**
   * A database input's columns' value types (see DatabaseInputPlan.types): what its rows' values
   * were read as, so that a row corrected for `rescore --rows` is held to them. Absent for files,
   * and in manifests of database runs finished before `rescore` took them.
   */
  types: z.record(z.string(), z.enum(PARQUET_VALUE_TYPES)).optional(),
  /** The input columns sent to the model, in model order (the row id member aside). */
  sent: z.array(z.string()),
  outputFormat: z.enum(OUTPUT_FORMATS),
  output: outputLayoutSchema,
  schema: outputSchemaSchema,
});
export type RunLayout = z.output<typeof runLayoutSchema>;

/** A prepared run's layout, as its manifest keeps it. */
export function runLayout(run: PreparedRun): RunLayout {
  const { input } = run;
  const files = input.syntax === 'postgresql' ? [] : input.files;
  const same = files.every((f) => f.columns.length === input.columns.length && f.columns.every((c, i) => c === input.columns[i]));
  return {
    syntax: input.syntax,
    columns: input.columns,
    ...(!same && { fileColumns: files.map((f) => f.columns) }),
    ...(input.syntax === 'postgresql' && { types: input.types }),
    sent: run.sent,
    outputFormat: run.outputFormat,
    output: run.output,
    schema: run.schema,
  };
}
