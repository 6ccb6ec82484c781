import { createHash } from 'node:crypto';
import {
  connectDatabase,
  describeSource,
  parseDatabaseUrl,
  readKeyRange,
  type ResultField,
  type TextRow,
  valueReader,
  type ValueReader,
} from '../database/index.js';
import { InputError } from '../errors.js';
import { type InputRow, MAX_ROW_DEPTH, nestedDeeperThan } from '../formats/index.js';
import { excerpt } from '../text-excerpt.js';
import { DATABASE_READ_TIMEOUT_MS, type DatabaseInputPlan, type DatabaseSegmentPlan, rowSource } from './database-plan.js';

/** What reading a segment's rows to their end found: for a database input, the sha256 of the rows read. */
export interface SegmentRead {
  /** sha256 of the segment's rows as read (see readDatabaseSegment); absent for files, whose bytes the plan hashed. */
  sha256?: string;
}

/**
 * A segment of a database input: the rows of its key range, in key order, through a cursor in a
 * READ ONLY transaction on a connection of its own, as records of typed values (see valueReader)
 * with their index in the run and their number in the key order as their `line`. The columns must
 * be those planned, and the rows as many (E_INPUT_CHANGED otherwise: a row was added, removed or
 * moved across the range since). Once every row is read, `onRead` hears the sha256 of the rows:
 * each row's values as the server's text, a JSON array a line, so the same rows give the same
 * checksum whatever reads them.
 */
export async function* readDatabaseSegment(
  input: DatabaseInputPlan,
  index: number,
  signal?: AbortSignal,
  onRead?: (read: SegmentRead) => void,
): AsyncGenerator<InputRow[]> {
  const segment = input.segments[index];
  const source = rowSource(input);
  const db = await connectDatabase(parseDatabaseUrl(input.location), { signal, statementTimeoutMs: DATABASE_READ_TIMEOUT_MS });
  const hash = createHash('sha256');
  const nests = input.columns.some((c) => input.types[c] === 'json');
  let readers: ValueReader[] | undefined;
  let next = segment.firstRow;
  try {
    const reading = readKeyRange(db, source, input.key, segment, { timeoutMs: DATABASE_READ_TIMEOUT_MS, ...(signal && { signal }) });
    for await (const { fields, rows } of reading) {
      readers ??= sameColumns(input, fields);
      if (next + rows.length > segment.firstRow + segment.rows) throw rowsChanged(input, segment, `more than ${segment.rows}`);
      const out: InputRow[] = [];
      for (const row of rows) {
        const text = JSON.stringify(row);
        hash.update(`${text}\n`);
        out.push(inputRow(input.columns, readers, row, next++, nests, text));
      }
      yield out;
    }
    if (next !== segment.firstRow + segment.rows) throw rowsChanged(input, segment, `${next - segment.firstRow}`);
    onRead?.({ sha256: hash.digest('hex') });
  } finally {
    await db.end();
  }
}

/** One row as the run reads it: its values by column; a row of a json value nested past MAX_ROW_DEPTH comes with its problem. */
function inputRow(columns: readonly string[], readers: readonly ValueReader[], row: TextRow, index: number, nests: boolean, text: string): InputRow {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) {
    const value = row[i];
    record[columns[i]] = value === null ? null : readers[i](value);
  }
  return (nests && nestedTooDeep(record, index, text)) || { index, line: index + 1, record };
}

/**
 * A row of a database input whose json values nest it past MAX_ROW_DEPTH (the row is one level),
 * as the run quarantines it: malformed, with an excerpt of `text`; undefined for a row within it.
 */
export function nestedTooDeep(record: Record<string, unknown>, index: number, text: string): InputRow | undefined {
  if (!nestedDeeperThan(record, MAX_ROW_DEPTH)) return undefined;
  return {
    index,
    line: index + 1,
    text: excerpt(text),
    problem: `nested more than ${MAX_ROW_DEPTH} levels deep (the row is one) by a json value; flatten it in the query`,
  };
}

/** The readers of the columns read, once they are the columns planned (names, order and types); E_INPUT_CHANGED otherwise. */
function sameColumns(input: DatabaseInputPlan, fields: readonly ResultField[]): ValueReader[] {
  const planned = input.databaseColumns;
  const differs = fields.length !== planned.length || fields.some((f, i) => f.name !== planned[i].name || f.typeOid !== planned[i].oid);
  if (differs) {
    throw new InputError(
      `${input.location} ${describeSource(rowSource(input))}: its columns are now ${excerpt(fields.map((f) => f.name).join(', '))}, not as the run planned them (${excerpt(planned.map((c) => `${c.name} ${c.type}`).join(', '))}); score it again with another --run-id`,
      'E_INPUT_CHANGED',
    );
  }
  return fields.map((f) => valueReader(f.typeOid));
}

/** E_INPUT_CHANGED of a segment whose key range holds other rows than planning counted. */
function rowsChanged(input: DatabaseInputPlan, segment: DatabaseSegmentPlan, held: string): InputError {
  const range = `${input.key} from ${segment.from === null ? 'the first' : `'${excerpt(segment.from, 200)}'`} to ${segment.to === null ? 'the last' : `before '${excerpt(segment.to, 200)}'`}`;
  return new InputError(
    `${input.location} ${describeSource(rowSource(input))}: segment ${segment.index} (${range}) holds ${held} rows where planning counted ${segment.rows}; the rows changed during the run: score it again with another --run-id once they are stable`,
    'E_INPUT_CHANGED',
  );
}
