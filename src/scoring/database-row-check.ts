import { UsageError } from '../errors.js';
import type { InputRow, ParquetValueType } from '../formats/index.js';
import { excerpt } from '../text-excerpt.js';
import { nestedTooDeep } from './database-segment.js';

/** What a corrected row of a run over a database is held to: the run's columns, their value types (as read), and its key column. */
export interface DatabaseRowShape {
  columns: readonly string[];
  types: Readonly<Record<string, ParquetValueType>>;
  key: string;
}

/** Where a corrected row stands: its index in the run, its number in the key order, and how messages name its line. */
export interface CorrectedPlace {
  index: number;
  line: number;
  /** `--rows <file>: line N (row R)`. */
  where: string;
  /** The key's value as errors.jsonl wrote it (JSON), or undefined where the run never read the row's values (malformed). */
  key: string | undefined;
}

/** Text that a number column's reader gives for a value no JSON number holds: NaN, the infinities, and digits a double would change. */
const NUMBER_TEXT = /^(NaN|-?Infinity|-?\d+(\.\d+)?([eE][+-]?\d+)?)$/;
const INTEGER_TEXT = /^-?\d+$/;

const isText = (v: unknown) => typeof v === 'string';
const isNumber = (v: unknown) => typeof v === 'number' || (isText(v) && NUMBER_TEXT.test(v));

/** The JSON values a column of each value type is read as (see valueReader), and how a message says it; null (NULL) fits every column. */
const FITS: Record<ParquetValueType, { holds: (v: unknown) => boolean; what: string }> = {
  boolean: { holds: (v) => typeof v === 'boolean', what: 'true or false' },
  int32: { holds: (v) => Number.isInteger(v), what: 'an integer' },
  int64: { holds: (v) => Number.isInteger(v) || (isText(v) && INTEGER_TEXT.test(v)), what: 'an integer (its digits as text past 2^53)' },
  float: { holds: isNumber, what: 'a number ("NaN", "Infinity" as text)' },
  double: { holds: isNumber, what: 'a number (its digits as text where a double would change it)' },
  string: { holds: isText, what: 'text' },
  date: { holds: isText, what: 'a date as text ("2026-01-31")' },
  timestamp: { holds: isText, what: 'a timestamp as text ("2026-01-31T10:00:00")' },
  binary: { holds: isText, what: 'its bytes as base64 text' },
  json: { holds: () => true, what: 'a JSON value' },
};

/**
 * The row a line of `rescore --rows` sends for a run over a database: its values by column, as
 * errors.jsonl wrote them (the typed values the run read: see valueReader), sent and written as a
 * segment sends and writes a row read from the table, so a corrected row's request and output are
 * those of the row read from the corrected table. Every column of the run must be there with a
 * value of its type (or null), no other, and the key column as it was (its value places the row in
 * the run's order): a usage error naming the line and the column otherwise. A row whose json
 * values nest past MAX_ROW_DEPTH is quarantined as malformed, as a run reading it would.
 */
export function correctedDatabaseRow(input: unknown, place: CorrectedPlace, shape: DatabaseRowShape): InputRow {
  const { where } = place;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new UsageError(`${where}: "input" must be the row's values by column, as errors.jsonl wrote them`);
  }
  const record = input as Record<string, unknown>;
  const unknown = Object.keys(record).filter((c) => !Object.hasOwn(shape.types, c));
  if (unknown.length > 0) {
    throw new UsageError(
      `${where}: "input" has ${unknown.length === 1 ? 'a column' : 'columns'} ${excerpt(unknown.map(quoted).join(', '))} the run's rows do not (${excerpt(shape.columns.join(', '))}): change the values, not the columns`,
    );
  }
  const missing = shape.columns.filter((c) => !Object.hasOwn(record, c));
  if (missing.length > 0)
    throw new UsageError(`${where}: "input" has no value for ${excerpt(missing.map(quoted).join(', '))}: give every column (null for NULL)`);
  for (const column of shape.columns) {
    const value = record[column];
    const fits = FITS[shape.types[column]];
    if (value !== null && !fits.holds(value)) {
      throw new UsageError(`${where}: column ${quoted(column)} holds ${excerpt(JSON.stringify(value), 200)}, where the run read ${fits.what} (or null)`);
    }
  }
  if (place.key !== undefined && JSON.stringify(record[shape.key]) !== place.key) {
    throw new UsageError(
      `${where}: column ${quoted(shape.key)} is the run's key (--segment-by): its value ${excerpt(place.key, 200)} places the row among the others; keep it, and change the other values`,
    );
  }
  return nestedTooDeep(record, place.index, JSON.stringify(record)) ?? { index: place.index, line: place.line, record };
}

/** A column's name as messages quote it: within bounds, in double quotes. */
function quoted(column: string): string {
  return `"${excerpt(column, 200)}"`;
}
