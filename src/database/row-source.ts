import type pg from 'pg';
import { AbortedError, type BatchScorerError, UsageError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import { columnValueType, type ColumnValueType } from './column-values.js';
import { databaseError, type DatabaseConnection, unlessAborted } from './database-client.js';
import { openRowCursor, type ResultField, type TextRow } from './row-cursor.js';
import { formatTableName, quoteIdentifier, quoteTable, type TableName } from './sql-identifier.js';

/** Where rows come from in a database: a table, or a query of the user's (one SELECT). */
export type RowSource = { table: TableName } | { query: string };

/** The most bytes of UTF-8 a query may take: it travels in job data and run files, and is never shown whole. */
export const MAX_QUERY_BYTES = 64 * 1024;

/** The bytes of a query a message shows. */
const QUERY_SHOWN_BYTES = 200;

/** What a query may start with (after spaces, comments and opening parentheses): a statement that only reads. */
const READING_STATEMENTS = ['select', 'with', 'values', 'table'];

/**
 * Why a query cannot be a run's input, or undefined: it must be one statement that reads, SELECT
 * (or WITH ... SELECT, VALUES, TABLE), of at most MAX_QUERY_BYTES. This is the first check; the
 * server's is the last (see readOnly): a query reads in a READ ONLY transaction, as one statement.
 */
export function queryProblem(query: string): string | undefined {
  const bytes = Buffer.byteLength(query);
  if (bytes > MAX_QUERY_BYTES) return `must take at most ${MAX_QUERY_BYTES / 1024} KiB, not ${bytes} bytes`;
  const start = query.replace(/^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/|\()*/, '');
  const word = /^[A-Za-z_]+/.exec(start)?.[0].toLowerCase();
  if (word === undefined) return 'must be one SELECT statement';
  if (!READING_STATEMENTS.includes(word)) return `must be one SELECT statement that only reads; it starts with ${excerpt(word.toUpperCase(), 64)}`;
  return undefined;
}

/** The source as messages name it: `table public.rentals`, or the query's beginning. */
export function describeSource(source: RowSource): string {
  return 'table' in source ? `table ${formatTableName(source.table)}` : `query '${excerpt(source.query.replace(/\s+/g, ' ').trim(), QUERY_SHOWN_BYTES)}'`;
}

/** The statement whose rows the source is; a query's one trailing semicolon is dropped, as psql would. */
function sourceStatement(source: RowSource): string {
  return 'table' in source ? `SELECT * FROM ${quoteTable(source.table)}` : source.query.replace(/;\s*$/, '');
}

/** The source as a subquery `q`: on lines of its own, so a query's last line comment ends there. */
function fromSource(source: RowSource): string {
  return `FROM (\n${sourceStatement(source)}\n) AS q`;
}

/**
 * The session settings every read is made with, so that a value's text is the same on every
 * server whatever its configuration: timestamps with time zone in UTC, dates as YYYY-MM-DD,
 * floats written exactly (shortest text that reads back the same), bytea as hex.
 */
const READING_SETTINGS: Record<string, string> = {
  TimeZone: 'UTC',
  DateStyle: 'ISO, YMD',
  IntervalStyle: 'postgres',
  extra_float_digits: '1',
  bytea_output: 'hex',
};

/**
 * Runs `work` in a READ ONLY transaction with `statement_timeout` set to `timeoutMs` and the
 * READING_SETTINGS: whatever the statement is, the server refuses to write. Rolled back at the
 * end (nothing to keep), also when `work` stops early.
 */
async function* readOnly<T>(connection: DatabaseConnection, timeoutMs: number, work: (client: pg.Client) => AsyncGenerator<T>): AsyncGenerator<T> {
  const { client } = connection;
  await client.query('BEGIN TRANSACTION READ ONLY');
  try {
    const settings = Object.entries({ statement_timeout: String(timeoutMs), ...READING_SETTINGS });
    await client.query(`SELECT ${settings.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(', ')}`, settings.flat());
    yield* work(client);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
  }
}

/** A column of a source: its name, its type as the server names it (`numeric(10,2)`), and the value type it is read as. */
export interface SourceColumn {
  name: string;
  /** The type as format_type writes it: `integer`, `character varying(20)`, `timestamp with time zone`. */
  type: string;
  /** pg_type.oid of the type: what its values are read by (see valueReader). */
  oid: number;
  valueType: ColumnValueType;
}

/** How a read of a source is bounded and stopped. */
export interface ReadOptions {
  /** The server's statement_timeout for the read, in ms: it counts from the cursor's opening to its last row. */
  timeoutMs: number;
  /** Aborted: the read fails E_ABORTED (the connection, opened with it, is ended). */
  signal?: AbortSignal;
}

/**
 * The source's columns, asked without reading a row (`LIMIT 0`): names, types and value types,
 * in the source's order. Two columns of one name are refused: a row could not hold both.
 */
export async function describeColumns(connection: DatabaseConnection, source: RowSource, options: ReadOptions): Promise<SourceColumn[]> {
  const text = `SELECT * ${fromSource(source)} LIMIT 0`;
  const fields = await only(
    readOnly(connection, options.timeoutMs, async function* (client) {
      const result = await client.query({ text, rowMode: 'array' });
      yield result.fields.map((f) => ({ name: f.name, typeOid: f.dataTypeID, typeModifier: f.dataTypeModifier }));
    }),
    { source, text },
    options,
  );
  const seen = new Set<string>();
  for (const { name } of fields) {
    if (seen.has(name)) throw new UsageError(`${describeSource(source)} has two columns named ${excerpt(name, 200)}: name each column once (AS another_name)`);
    seen.add(name);
  }
  const names = await connection.client
    .query<{ type: string }>('SELECT format_type(t, m) AS type FROM unnest($1::oid[], $2::int4[]) WITH ORDINALITY AS f(t, m, n) ORDER BY n', [
      fields.map((f) => f.typeOid),
      fields.map((f) => f.typeModifier),
    ])
    .catch((err: unknown) => {
      throw readFailure(err, `naming the column types of ${describeSource(source)}`, options.signal);
    });
  return fields.map((f, i) => ({ name: f.name, type: names.rows[i].type, oid: f.typeOid, valueType: columnValueType(f.typeOid) }));
}

/** The columns of a table's primary key, in key order; empty when it has none. */
export async function primaryKey(connection: DatabaseConnection, table: TableName, options: ReadOptions): Promise<string[]> {
  const text = `SELECT a.attname AS name FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY k.n`;
  const result = await connection.client.query<{ name: string }>(text, [quoteTable(table)]).catch((err: unknown) => {
    throw readFailure(err, `finding the primary key of ${formatTableName(table)}`, options.signal);
  });
  return result.rows.map((r) => r.name);
}

/** One key of the ordered scan: its text (null for NULL), and whether the row before had the same key. */
export interface ScannedKey {
  key: string | null;
  repeated: boolean;
}

/**
 * The key column of every row, in key order (NULLs last), a batch at a time through a cursor:
 * what planning cuts segments from. `limit` reads only the first rows. Each key says whether it
 * equals the one before (as the server compares them, so `1.0` and `1.00` are one key).
 */
export async function* scanKeys(
  connection: DatabaseConnection,
  source: RowSource,
  key: string,
  options: ReadOptions & { limit?: number },
): AsyncGenerator<ScannedKey[]> {
  const k = `q.${quoteIdentifier(key)}`;
  const limited = options.limit !== undefined;
  const text = `SELECT ${k}, ${k} = lag(${k}) OVER (ORDER BY ${k}) ${fromSource(source)} ORDER BY ${k}${limited ? ' LIMIT $1' : ''}`;
  yield* cursorRows(connection, source, text, limited ? [options.limit] : [], options, (rows) =>
    rows.map(([value, repeated]) => ({ key: value, repeated: repeated === 't' })),
  );
}

/** A range of keys: from `from` (inclusive), up to `to` (exclusive); null: unbounded on that side. */
export interface KeyRange {
  from: string | null;
  to: string | null;
}

/** Rows of a key range, read: the result's columns, and a batch of rows as the server's text. */
export interface RangeRows {
  fields: readonly ResultField[];
  rows: TextRow[];
}

/**
 * The rows whose key is in `range`, in key order, a batch at a time through a cursor. The bounds
 * are sent as parameters the server reads as the key's type, so they compare as the key does.
 */
export async function* readKeyRange(
  connection: DatabaseConnection,
  source: RowSource,
  key: string,
  range: KeyRange,
  options: ReadOptions,
): AsyncGenerator<RangeRows> {
  const k = `q.${quoteIdentifier(key)}`;
  const values: string[] = [];
  const where: string[] = [];
  if (range.from !== null) where.push(`${k} >= $${values.push(range.from)}`);
  if (range.to !== null) where.push(`${k} < $${values.push(range.to)}`);
  const text = `SELECT * ${fromSource(source)}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${k}`;
  yield* cursorRows(connection, source, text, values, options, (rows, fields) => ({ fields, rows }));
}

/** A statement's rows through a cursor in a read-only transaction, each batch as `shape` makes it; failures catalogued. */
async function* cursorRows<T>(
  connection: DatabaseConnection,
  source: RowSource,
  text: string,
  values: readonly unknown[],
  options: ReadOptions,
  shape: (rows: TextRow[], fields: readonly ResultField[]) => T,
): AsyncGenerator<T> {
  yield* caught(
    readOnly(connection, options.timeoutMs, async function* (client) {
      const cursor = await openRowCursor(client, text, values);
      const { signal } = options;
      try {
        for (let rows = await unlessAborted(cursor.read(), signal); rows.length > 0; rows = await unlessAborted(cursor.read(), signal)) {
          yield shape(rows, cursor.fields());
        }
      } finally {
        // An aborted read's connection is ended: its portal is gone with it, and closing would wait for an answer that never comes.
        if (!signal?.aborted) await cursor.close();
      }
    }),
    { source, text },
    options,
  );
}

/** A statement read from a source: what its failures are said of. */
interface Statement {
  source: RowSource;
  /** The statement's text, as sent: the server's error positions count in it. */
  text: string;
}

/** Every item of a read, its failures catalogued (see readFailure). */
async function* caught<T>(reading: AsyncGenerator<T>, statement: Statement, options: ReadOptions): AsyncGenerator<T> {
  try {
    yield* reading;
  } catch (err) {
    throw readFailure(err, `reading ${describeSource(statement.source)}`, options.signal, statement);
  }
}

/** The one item a read yields. */
async function only<T>(reading: AsyncGenerator<T>, statement: Statement, options: ReadOptions): Promise<T> {
  for await (const item of caught(reading, statement, options)) return item;
  throw new Error(`reading ${describeSource(statement.source)} gave nothing`);
}

/**
 * A failed read as a catalogued error (see databaseError): E_ABORTED once `signal` stopped it; a
 * write refused by the read-only transaction, or a query of more than one statement, said as
 * what the query must be.
 */
export function readFailure(err: unknown, doing: string, signal?: AbortSignal, statement?: Statement): BatchScorerError {
  if (signal?.aborted) return new AbortedError(`${doing} was cancelled`, err);
  const code = (err as { code?: unknown }).code;
  if (statement && 'query' in statement.source) {
    if (code === '25006') return new UsageError(`--query must only read: ${databaseError(err, doing).message}`, { cause: err });
    const position = Number((err as { position?: unknown }).position);
    if (code === '42601' && statement.text[position - 1] === ';') {
      return new UsageError(`--query must be one statement: ${describeSource(statement.source)} has a ';' before its end`, { cause: err });
    }
  }
  return databaseError(err, doing);
}
