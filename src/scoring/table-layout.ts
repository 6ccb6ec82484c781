import { checkIdentifier, STAGING_ORDER, STAGING_PART, type TableColumn } from '../database/index.js';
import { type ParquetValueType, ROW_NUMBER_COLUMN } from '../formats/index.js';
import { UsageError } from '../errors.js';
import type { OutputSchema, TargetSchema } from './output-schema.js';
import type { InputPlan } from './plan.js';

/**
 * The PostgreSQL type of a Parquet input's column: the type that holds its values as
 * predictions.csv writes them. Floats are double precision (a float's shortest decimal, which the
 * reader gives, read as a real could round elsewhere); timestamps are text, their ISO form kept,
 * since the column type alone does not say whether one is UTC; binary is its base64 text.
 */
const PARQUET_TYPES: Record<ParquetValueType, string> = {
  boolean: 'boolean',
  int32: 'integer',
  int64: 'bigint',
  float: 'double precision',
  double: 'double precision',
  string: 'text',
  date: 'date',
  timestamp: 'text',
  json: 'jsonb',
  binary: 'text',
};

/**
 * The out-table's columns, in order: `row_number` (bigint) with --row-number, the input columns
 * the run keeps, then the prediction columns. An input column takes the type its input declares
 * (`declared`: a database input's own column types), else its Parquet type's, else text: a CSV or
 * JSON Lines value is kept as the text predictions.csv holds. Prediction columns take their
 * member's type (see predictionColumnType). Names PostgreSQL would cut (past 63 bytes) are refused.
 */
export function planTableColumns(
  input: Pick<InputPlan, 'types'>,
  inputColumns: readonly string[],
  rowNumber: boolean,
  schema: OutputSchema,
  probe: Record<string, unknown>,
  declared?: Readonly<Record<string, string>>,
): TableColumn[] {
  const types = input.types ?? {};
  const columns: TableColumn[] = [
    ...(rowNumber ? [{ name: ROW_NUMBER_COLUMN, type: 'bigint' }] : []),
    ...inputColumns.map((name) => ({ name, type: declared?.[name] ?? (types[name] ? PARQUET_TYPES[types[name]] : 'text') })),
    ...schema.targets.flatMap((t) => t.columns.map((c) => ({ name: c.column, type: predictionColumnType(t, c.member, probe) }))),
  ];
  for (const { name } of columns) {
    checkIdentifier(name, '--out-table: a column');
    if (name === STAGING_PART || name === STAGING_ORDER) {
      throw new UsageError(`--out-table: the column ${name} is the staging table's own: leave it out with --drop-columns ${name}`);
    }
  }
  return columns;
}

/**
 * A prediction column's type, by its member: confidences and interval ends are double precision,
 * anomaly flags boolean, explanations jsonb; a target's value is double precision for a numeric
 * target (one answering an interval, or a number in the probe), boolean where the probe answered
 * one, else text (a categorical target's class).
 */
function predictionColumnType(target: TargetSchema, member: string, probe: Record<string, unknown>): string {
  const suffix = member.slice(target.target.length);
  if (suffix === '_confidence' || suffix === '_min' || suffix === '_max') return 'double precision';
  if (suffix === '_anomaly') return 'boolean';
  if (suffix === '_explain') return 'jsonb';
  if (target.interval || typeof probe[member] === 'number') return 'double precision';
  return typeof probe[member] === 'boolean' ? 'boolean' : 'text';
}
