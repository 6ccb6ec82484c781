import { z } from 'zod';
import { PREDICTION_MEMBERS, type PredictionMember } from '../config/index.js';

/** One output column: which answer member fills it, and its name in the output. */
const outputColumnSchema = z.object({ member: z.string(), column: z.string() });
export type OutputColumn = z.output<typeof outputColumnSchema>;

/** A target's columns; `interval` when the model answers `_min`/`_max` (numeric targets). */
const targetSchemaSchema = z.object({ target: z.string(), interval: z.boolean(), columns: z.array(outputColumnSchema) });
export type TargetSchema = z.output<typeof targetSchemaSchema>;

/** A run's prediction columns, fixed before any row is scored. */
export const outputSchemaSchema = z.object({
  targets: z.array(targetSchemaSchema),
  /** Prediction columns, in output order, after the input columns. */
  columns: z.array(z.string()),
  warnings: z.array(z.string()),
});
export type OutputSchema = z.output<typeof outputSchemaSchema>;

/** The prefix a clashing target's columns get, repeated until no input column has the name. */
export const CLASH_PREFIX = 'pred_';

/**
 * The answer members of each prediction member `--prediction-columns` names, as suffixes of the
 * target, given which suffixes the probe's answer carries: `interval` only for targets whose
 * answers carry `_min` and `_max` (numeric ones), `anomaly` only where the engine answers it
 * (lightwood did; MindsDB's BYOM engine and many others never do, and an always empty column
 * would only mislead).
 */
const MEMBER_SUFFIXES: Record<PredictionMember, (answered: (suffix: string) => boolean) => string[]> = {
  value: () => [''],
  confidence: () => ['_confidence'],
  interval: (answered) => (answered('_min') && answered('_max') ? ['_min', '_max'] : []),
  anomaly: (answered) => (answered('_anomaly') ? ['_anomaly'] : []),
  explain: () => ['_explain'],
};

/** The prediction members a run writes: those asked for, or all but explain (which --explain adds), in the fixed order. */
export function predictionMembers(asked: readonly PredictionMember[] | undefined, explain: boolean): PredictionMember[] {
  const chosen = new Set<PredictionMember>(asked ?? ['value', 'confidence', 'interval', 'anomaly']);
  if (explain) chosen.add('explain');
  return PREDICTION_MEMBERS.filter((m) => chosen.has(m));
}

/**
 * Output columns from the targets and one answer row (the probe), so every segment and worker
 * writes the same columns. Per target, of the members chosen and in this order: `<t>`,
 * `<t>_confidence`, `<t>_min` and `<t>_max` and `<t>_anomaly` when the model answers them,
 * `<t>_explain`. When any of a target's columns has the name of an input column written
 * (`taken`), the input column keeps its name and all of that target's columns get the prefix
 * `pred_` (again until unique): one rule, the same every time.
 */
export function buildOutputSchema(
  targets: readonly string[],
  probe: Record<string, unknown>,
  inputColumns: readonly string[],
  members: readonly PredictionMember[],
): OutputSchema {
  const taken = new Set(inputColumns);
  const warnings: string[] = [];
  const schemas = targets.map((target) => {
    const answered = (suffix: string) => `${target}${suffix}` in probe;
    const interval = answered('_min') && answered('_max');
    const suffixes = members.flatMap((m) => MEMBER_SUFFIXES[m](answered));
    let prefix = '';
    while (suffixes.some((s) => taken.has(`${prefix}${target}${s}`))) prefix += CLASH_PREFIX;
    if (prefix) warnings.push(`input column(s) clash with the predictions of "${target}": its prediction columns are named ${prefix}${target}*`);
    const columns = suffixes.map((s) => ({ member: `${target}${s}`, column: `${prefix}${target}${s}` }));
    columns.forEach((c) => taken.add(c.column));
    return { target, interval, columns };
  });
  return { targets: schemas, columns: schemas.flatMap((t) => t.columns.map((c) => c.column)), warnings };
}

/**
 * Targets named by an answer row when describe named none: every member `<t>` that comes with a
 * `<t>_confidence`.
 */
export function targetsFromAnswer(row: Record<string, unknown>): string[] {
  return Object.keys(row)
    .filter((k) => k.endsWith('_confidence'))
    .map((k) => k.slice(0, -'_confidence'.length))
    .filter((t) => t in row);
}
