import { z } from 'zod';
import { DEFAULT_LIMITS, type Limits, type RunOptions } from '../config/index.js';
import {
  connectDatabase,
  type DatabaseConnection,
  type DatabaseUrl,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  describeColumns,
  describeSource,
  formatDatabaseUrl,
  formatTableName,
  parseTableName,
  primaryKey,
  type RowSource,
  type ScannedKey,
  scanKeys,
} from '../database/index.js';
import { InputError, UsageError } from '../errors.js';
import { PARQUET_VALUE_TYPES } from '../formats/index.js';
import { excerpt } from '../text-excerpt.js';
import { tooManySegments } from './segment-bound.js';

/**
 * A slice of a database input that one worker scores on its own: the rows whose key is in
 * [from, to), as many as planning counted. The bounds are the key's values as the server writes
 * them, read back as the key's type, so a resumed or retried segment reads exactly these rows.
 */
const databaseSegmentSchema = z.object({
  index: z.int().min(0),
  /** 0-based index, in the whole run, of the segment's first row. */
  firstRow: z.int().min(0),
  rows: z.int().min(0),
  /** The segment's first row's number in the key order (1-based), for messages. */
  firstLine: z.int().min(1),
  /** The first key (inclusive); null for the first segment, which takes every key below the next. */
  from: z.string().nullable(),
  /** The next segment's first key (exclusive); null for the last segment of a run without --limit. */
  to: z.string().nullable(),
});
export type DatabaseSegmentPlan = z.output<typeof databaseSegmentSchema>;

/** A column of a database input as the server describes it: its type (`numeric(10,2)`) and the type's oid. */
const databaseColumnSchema = z.object({ name: z.string(), type: z.string(), oid: z.int() });

/** What planning a database input found: the rows' columns and types, the key, and the key ranges to score. */
export const databaseInputPlanSchema = z.object({
  syntax: z.literal('postgresql'),
  /** The database, as formatDatabaseUrl writes it (no password: the URL never holds one). */
  location: z.string(),
  /** The table read (`schema.table`), or absent for a query. */
  table: z.string().optional(),
  /** The query read, whole (it is read again by every segment); absent for a table. */
  query: z.string().optional(),
  /** The key column: segments are ranges of its values, and rows go in its order. */
  key: z.string(),
  columns: z.array(z.string()),
  /** Each column's value type: what its values are read as and a Parquet output keeps them as. */
  types: z.record(z.string(), z.enum(PARQUET_VALUE_TYPES)),
  /** Each column's PostgreSQL type, in column order: segments check they read the same columns. */
  databaseColumns: z.array(databaseColumnSchema),
  /** Rows to score (all of them, or the first --limit by key). */
  rows: z.int().min(0),
  segments: z.array(databaseSegmentSchema),
});
export type DatabaseInputPlan = z.output<typeof databaseInputPlanSchema>;

/** How long one read of a database input may take (the server's statement_timeout): a segment's waits for the model included. */
export const DATABASE_READ_TIMEOUT_MS = DEFAULT_STATEMENT_TIMEOUT_MS;

/** The rows a run reads from its database: its `table` or its `query`. */
export function rowSource(plan: Pick<DatabaseInputPlan, 'table' | 'query'>): RowSource {
  if (plan.query !== undefined) return { query: plan.query };
  if (plan.table !== undefined) return { table: parseTableName(plan.table, '--table') };
  throw new UsageError('a database input needs --table or --query');
}

/** What planning a database input takes from the run's options and the deployment. */
export interface DatabasePlanOptions {
  options: Pick<RunOptions, 'table' | 'query' | 'segmentBy' | 'segmentRows' | 'limit'>;
  /** The bound on segments (MAX_SEGMENTS); DEFAULT_LIMITS when absent. */
  limits?: Limits;
  signal?: AbortSignal;
}

/**
 * Plans a database input: its columns and their types (without reading a row), its key (the
 * option, or the table's one-column primary key), then one ordered scan of the key alone, cut
 * every `segmentRows` rows into key ranges with their exact row counts. A key that is NULL or
 * repeats is refused, naming the column and the value. With --limit the first N rows by key are
 * planned, the last range closed at the next key.
 */
export async function planDatabase(database: DatabaseUrl, { options, limits = DEFAULT_LIMITS, signal }: DatabasePlanOptions): Promise<DatabaseInputPlan> {
  const source = rowSource({
    ...(options.table !== undefined && { table: formatTableName(parseTableName(options.table, '--table')) }),
    ...(options.query !== undefined && { query: options.query }),
  });
  const location = formatDatabaseUrl(database);
  const db = await connectDatabase(database, { signal, statementTimeoutMs: DATABASE_READ_TIMEOUT_MS });
  try {
    const read = { timeoutMs: DATABASE_READ_TIMEOUT_MS, ...(signal && { signal }) };
    const columns = await describeColumns(db, source, read);
    const key = options.segmentBy ?? (await tableKey(db, source, read));
    if (!columns.some((c) => c.name === key)) {
      throw new UsageError(
        `--segment-by ${excerpt(key, 200)}: ${describeSource(source)} has no column ${excerpt(key, 200)}; its columns are ${excerpt(columns.map((c) => c.name).join(', '))}`,
      );
    }
    const { segmentRows, limit } = options;
    const scan = scanKeys(db, source, key, { ...read, ...(limit !== undefined && { limit: limit + 1 }) });
    const ranges = { segmentRows, ...(limit !== undefined && { limit }), maxSegments: limits.segments, key, source: describeSource(source) };
    const segments = await keyRanges(scan, { ...ranges, name: `${location} ${describeSource(source)}` });
    return {
      syntax: 'postgresql',
      location,
      ...('table' in source ? { table: formatTableName(source.table) } : { query: source.query }),
      key,
      columns: columns.map((c) => c.name),
      types: Object.fromEntries(columns.map((c) => [c.name, c.valueType])),
      databaseColumns: columns.map(({ name, type, oid }) => ({ name, type, oid })),
      rows: segments.reduce((n, s) => n + s.rows, 0),
      segments,
    };
  } finally {
    await db.end();
  }
}

/** A table's key when --segment-by names none: its primary key, if that is one column. */
async function tableKey(db: DatabaseConnection, source: RowSource, read: { timeoutMs: number; signal?: AbortSignal }): Promise<string> {
  if (!('table' in source)) throw new UsageError('--query needs --segment-by <column>: a unique, never NULL column of its rows');
  const key = await primaryKey(db, source.table, read);
  if (key.length !== 1) {
    const has = key.length === 0 ? 'has no primary key' : `has a primary key of ${key.length} columns (${excerpt(key.join(', '), 200)})`;
    throw new UsageError(`--table ${formatTableName(source.table)} ${has}: name a unique, never NULL column with --segment-by`);
  }
  return key[0];
}

/** How keyRanges cuts and names: the rows a range holds, the canary's rows, the bound on ranges, and the names messages give. */
export interface KeyRangeOptions {
  segmentRows: number;
  limit?: number;
  maxSegments: number;
  /** The key column, as the user named it. */
  key: string;
  /** The source, as messages name it (see describeSource). */
  source: string;
  /** The input, as a refusal past MAX_SEGMENTS names it. */
  name: string;
}

/**
 * The key ranges of `segmentRows` rows each, from the ordered scan of the key (of the first
 * `limit` rows and the key after them, with --limit): each range from its first key to the next
 * range's (the first open below, the last above unless a canary's next key closes it), with its
 * row count. A NULL or repeated key is refused: ranges of such a key would not hold the rows
 * counted.
 */
export async function keyRanges(
  scan: AsyncIterable<readonly ScannedKey[]> | Iterable<readonly ScannedKey[]>,
  options: KeyRangeOptions,
): Promise<DatabaseSegmentPlan[]> {
  const { segmentRows, limit, maxSegments, source } = options;
  const column = excerpt(options.key, 200);
  const segments: DatabaseSegmentPlan[] = [];
  let rows = 0;
  scan: for await (const keys of scan) {
    for (const { key: value, repeated } of keys) {
      if (value === null) {
        throw new InputError(
          `--segment-by ${column}: ${source} has rows whose ${column} is NULL; segments are ranges of a key that is never NULL: choose another column, or leave those rows out of the query`,
        );
      }
      if (repeated) {
        throw new InputError(
          `--segment-by ${column}: ${source} has more than one row whose ${column} is '${excerpt(value, 200)}'; segments are ranges of a unique key: choose a unique column`,
        );
      }
      const last = segments.at(-1);
      if (rows === limit) {
        // The key after the canary's rows closes its last range.
        if (last) last.to = value;
        break scan;
      }
      if (rows % segmentRows === 0) {
        if (segments.length === maxSegments) throw tooManySegments(options.name, segmentRows, maxSegments, rows + 1);
        if (last) last.to = value;
        segments.push({ index: segments.length, firstRow: rows, rows: 0, firstLine: rows + 1, from: last ? value : null, to: null });
      }
      segments[segments.length - 1].rows++;
      rows++;
    }
  }
  return segments;
}
