import { BatchScorerError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';

/** Which input columns go to the model, and what to warn about. */
export interface ColumnPlan {
  /** The model's inputs found in the file, in model order: the only members sent. */
  sent: string[];
  missing: string[];
  warnings: string[];
}

/**
 * Checks a file's columns against the model's inputs before any predict call: none of them is an
 * error, some missing is a warning (an error when strict), extra columns pass through unsent.
 */
export function checkColumns(columns: readonly string[], inputs: readonly string[] | undefined, strict: boolean, fileName: string): ColumnPlan {
  if (!inputs || inputs.length === 0) {
    return { sent: [...columns], missing: [], warnings: ['the model did not describe its inputs: every column is sent'] };
  }
  const present = new Set(columns);
  const sent = inputs.filter((c) => present.has(c));
  const missing = inputs.filter((c) => !present.has(c));
  if (sent.length === 0) {
    throw new BatchScorerError(
      'E_COLUMNS',
      `${fileName} has none of the model's input columns (${excerpt(inputs.join(', '))}); its columns are ${excerpt(columns.join(', '))}`,
    );
  }
  if (missing.length > 0 && strict) {
    throw new BatchScorerError('E_COLUMNS', `${fileName} lacks the model's input column(s) ${excerpt(missing.join(', '))} (--strict-columns)`);
  }
  const warnings = missing.length > 0 ? [`${fileName} lacks the model's input column(s) ${excerpt(missing.join(', '))}: the model sees them as null`] : [];
  return { sent, missing, warnings };
}
