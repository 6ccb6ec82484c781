import type { RunOptions } from '../config/index.js';
import { UsageError } from '../errors.js';
import { isUtf8, type ParquetOutputColumn, type ParquetValueType, ROW_NUMBER_COLUMN } from '../formats/index.js';
import { excerpt } from '../text-excerpt.js';
import type { OutputSchema } from './output-schema.js';
import { planTableColumns } from './table-layout.js';
import type { InputPlan } from './plan.js';
import type { OutputFormat, OutputLayout } from './prepared-run.js';

/**
 * The input columns an output carries: all of them, or those `--keep-columns` names, less those
 * `--drop-columns` names, always in input order. A name the input does not have is a usage error
 * naming the columns it has, before anything is scored.
 */
export function keptColumns(columns: readonly string[], options: Pick<RunOptions, 'keepColumns' | 'dropColumns'>, inputName: string): string[] {
  const have = new Set(columns);
  for (const [flag, names] of [
    ['--keep-columns', options.keepColumns],
    ['--drop-columns', options.dropColumns],
  ] as const) {
    const unknown = (names ?? []).filter((n) => !have.has(n));
    if (unknown.length > 0) {
      throw new UsageError(`${flag}: ${inputName} has no column(s) ${excerpt(unknown.join(', '))}; its columns are ${excerpt(columns.join(', '))}`);
    }
  }
  const keep = options.keepColumns && new Set(options.keepColumns);
  const drop = new Set(options.dropColumns ?? []);
  return columns.filter((c) => (!keep || keep.has(c)) && !drop.has(c));
}

/**
 * The output's format: asked, or the input's (CSV for a database). A run writing into a table
 * (--out-table) writes its segments' parts as CSV, the rows predictions.csv would hold, which COPY
 * loads as they are (see table-load.ts).
 */
export function outputFormat(input: InputPlan, options: Pick<RunOptions, 'format' | 'outTable'>): OutputFormat {
  if (options.outTable !== undefined) return 'csv';
  return options.format ?? (input.syntax === 'postgresql' ? 'csv' : input.syntax);
}

/**
 * The output's shape besides the predictions: the input columns kept (see keptColumns), the row number, the
 * compression (gzip by default when every input file is gzipped; Parquet compresses its own
 * pages, and a table's parts are loaded as they are) and, for Parquet and a table, every column's type.
 */
export function planOutputLayout(
  input: InputPlan,
  inputColumns: string[],
  options: RunOptions,
  format: OutputFormat,
  schema: OutputSchema,
  probe: Record<string, unknown>,
): OutputLayout {
  if (options.rowNumber && inputColumns.includes(ROW_NUMBER_COLUMN)) {
    throw new UsageError(`--row-number: ${input.location} has a column named ${ROW_NUMBER_COLUMN} already; drop it with --drop-columns ${ROW_NUMBER_COLUMN}`);
  }
  if (format === 'parquet' && !isUtf8(options.outputEncoding)) {
    throw new UsageError(`--output-encoding ${options.outputEncoding}: Parquet text is UTF-8; use it with --format csv or jsonl`);
  }
  if (format === 'parquet' && options.compress === 'gzip') {
    throw new UsageError('--compress gzip: Parquet output compresses its own pages (Snappy); use --compress none or leave it out');
  }
  if (options.outTable !== undefined) {
    return {
      inputColumns,
      rowNumber: options.rowNumber,
      compress: 'none',
      tableColumns: planTableColumns(input, inputColumns, options.rowNumber, schema, probe, declaredTypes(input)),
    };
  }
  const gzipped = input.syntax !== 'postgresql' && input.files.every((f) => f.gzip);
  const compress = format === 'parquet' ? 'none' : (options.compress ?? (gzipped ? 'gzip' : 'none'));
  const layout: OutputLayout = { inputColumns, rowNumber: options.rowNumber, compress };
  if (format !== 'parquet') return layout;
  const types = input.types ?? {};
  const parquetColumns: ParquetOutputColumn[] = [
    ...(options.rowNumber ? [{ name: ROW_NUMBER_COLUMN, type: 'int64' as const }] : []),
    // CSV values are text as written; JSON Lines values of any shape are kept as their JSON text.
    ...inputColumns.map((name) => ({ name, type: types[name] ?? 'string' })),
    ...schema.targets.flatMap((t) => t.columns.map((c) => ({ name: c.column, type: predictionType(c.member, t.target, probe[c.member]) }))),
  ];
  return { ...layout, parquetColumns };
}

/**
 * A prediction column's Parquet type: confidences and interval bounds are numbers; a value or
 * anomaly has the type the probe's answer showed (text when it showed none: text holds any value).
 */
function predictionType(member: string, target: string, probed: unknown): ParquetValueType {
  if (member === `${target}_confidence` || member === `${target}_min` || member === `${target}_max`) return 'double';
  if (member === `${target}_explain`) return 'string';
  if (typeof probed === 'number') return 'double';
  if (typeof probed === 'boolean') return 'boolean';
  return 'string';
}

/** The first oid of objects a database's users make (FirstNormalObjectId): types below it are built in, and exist in every database. */
const FIRST_USER_OID = 16384;

/**
 * The PostgreSQL types of a database input's columns, as its out-table declares them: each
 * column's own type where it is built in and its values are written back as the server wrote
 * them; text for a type of the input database's own (an enum, a domain), which the out-table's
 * database may lack, and for bytea, written as base64 (see valueReader). Undefined for files.
 */
function declaredTypes(input: InputPlan): Record<string, string> | undefined {
  if (input.syntax !== 'postgresql') return undefined;
  return Object.fromEntries(input.databaseColumns.map((c) => [c.name, c.oid < FIRST_USER_OID && input.types[c.name] !== 'binary' ? c.type : 'text']));
}
