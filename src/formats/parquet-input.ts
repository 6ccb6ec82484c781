import type { AsyncBuffer, FileMetaData, ParquetParsers, SchemaElement, SchemaTree } from 'hyparquet';
import { BatchScorerError, InputError, errorMessage } from '../errors.js';
import { readFooter, type ParquetBounds } from './parquet-footer.js';

/**
 * Reads bytes [start, end) of the file (end exclusive). The caller supplies it over a local file or
 * S3 ranged GETs; it must answer exactly end - start bytes, so a shorter answer means the file
 * changed (or its size was wrong) and is reported as E_INPUT_CHANGED.
 */
export type RangeRead = (start: number, end: number) => Promise<Uint8Array>;

/**
 * The value types this tool reads and writes. Every Parquet column is mapped onto one of them
 * (see `columnType`); the JS value each gives is documented on `readParquetRows`.
 */
export const PARQUET_VALUE_TYPES = ['boolean', 'int32', 'int64', 'float', 'double', 'string', 'date', 'timestamp', 'json', 'binary'] as const;
export type ParquetValueType = (typeof PARQUET_VALUE_TYPES)[number];

/** A top-level column of a Parquet file, as this tool reads it. */
export interface ParquetColumn {
  name: string;
  type: ParquetValueType;
}

/** What the footer says about a file: its columns, and its row groups in file order. */
export interface ParquetLayout {
  columns: ParquetColumn[];
  /** Row counts of the row groups, in file order: the units `readParquetRows` reads. */
  rowGroups: { rows: number }[];
  /** The sum of the row groups' rows. */
  rows: number;
}

/**
 * The first footer read: enough for the metadata of most files (hundreds of row groups of a few
 * dozen columns) in one request; a bigger footer costs a second one, never a read of the whole file.
 * hyparquet's own default (512 KiB) would fetch all of a small file just to learn its layout.
 */
const FOOTER_GUESS = 64 * 1024;

/** The codecs hyparquet decodes by itself; others need hyparquet-compressors, which this tool does not ship. */
const CODECS = new Set(['UNCOMPRESSED', 'SNAPPY']);

/**
 * Reads the file's footer (ranged reads of its end only) and answers its columns and row groups.
 * Throws InputError naming `name` for a file that is not Parquet, a column whose type this tool
 * cannot read (nested, list, map, time of day, interval...), or a codec hyparquet cannot decode,
 * and `bounds.refuse`'s error for a footer past them, before it is read or parsed.
 */
export async function readParquetLayout(read: RangeRead, size: number, name: string, bounds?: ParquetBounds): Promise<ParquetLayout> {
  const { columns, metadata } = await openParquet(read, size, name, bounds);
  const rowGroups = metadata.row_groups.map((group) => ({ rows: Number(group.num_rows) }));
  return { columns: columns.map(({ name, type }) => ({ name, type })), rowGroups, rows: rowGroups.reduce((sum, group) => sum + group.rows, 0) };
}

/**
 * Yields the rows of row groups [first, first + count), in slices of at most 1,000, reading only the
 * footer and those row groups' column chunks. One row group is held at a time: the next is read
 * when the consumer asks for it.
 *
 * Rows are objects keyed by column name, in the file's column order, with JSON-safe values:
 * boolean → boolean; int32, float, double → number (a decimal as the nearest double, a float as
 * the shortest decimal that is the same float, NaN and ±Infinity as 'NaN', 'Infinity', '-Infinity'); int64 →
 * number when it is a safe integer, else its decimal string; string → string; date →
 * 'YYYY-MM-DD'; timestamp → ISO-8601 with every non-zero fraction digit down to nanoseconds,
 * ending in 'Z' when the column is adjusted to UTC and without a zone when it holds local (naive)
 * times; json → the parsed value; binary → base64; a null → null.
 *
 * Each call reads the footer again (one ranged read of the file's end): a call is meant to cover a
 * work unit of one or more row groups, not one row. The footer is not bounded here: it is the
 * one `readParquetLayout` read within its bounds, the file's identity checked by `read`.
 */
export async function* readParquetRows(
  read: RangeRead,
  size: number,
  name: string,
  groups: { first: number; count: number },
): AsyncGenerator<Record<string, unknown>[]> {
  const parquet = await openParquet(read, size, name);
  const { metadata, columns } = parquet;
  const { first, count } = groups;
  const total = metadata.row_groups.length;
  if (!Number.isInteger(first) || !Number.isInteger(count) || first < 0 || count < 0 || first + count > total) {
    throw new RangeError(`${name}: row groups [${first}, ${first + count}) are outside the file's ${total} row groups`);
  }
  let rowStart = 0;
  for (let g = 0; g < first; g++) rowStart += Number(metadata.row_groups[g].num_rows);
  for (let g = first; g < first + count; g++) {
    const groupRows = Number(metadata.row_groups[g].num_rows);
    const release = await takeGroupTurn();
    try {
      const values = await decodeGroup(parquet, rowStart, groupRows, `${name}: row group ${g} cannot be read`);
      // Turned into row objects a slice at a time: a row group of 100,000 rows as objects would hold several times the memory.
      for (let from = 0; from < groupRows; from += ROWS_PER_SLICE) {
        const rows: Record<string, unknown>[] = [];
        for (let r = from; r < Math.min(from + ROWS_PER_SLICE, groupRows); r++) {
          const row: Record<string, unknown> = {};
          for (let c = 0; c < columns.length; c++) row[columns[c].name] = values[c][r];
          rows.push(row);
        }
        yield rows;
      }
    } finally {
      release();
    }
    rowStart += groupRows;
  }
}

/**
 * The row group of `groupRows` rows from `rowStart`, as one array of JSON-safe values per column (in
 * `columns` order). Decoded one column at a time and converted at once: hyparquet decodes a page
 * whole (DuckDB writes one page per column chunk), and its transient arrays (a view per text value,
 * a BigInt per int64) are then one column's, not the whole group's.
 */
async function decodeGroup({ file, metadata, columns }: OpenParquet, rowStart: number, groupRows: number, context: string): Promise<unknown[][]> {
  const { parquetRead } = await hyparquet();
  const values: unknown[][] = [];
  for (const column of columns) {
    const data = new Array<unknown>(groupRows);
    try {
      // A row range that is exactly one row group makes hyparquet fetch that group's column chunk only.
      // utf8: false keeps unannotated BYTE_ARRAY as bytes, so binary data is not mangled into text.
      await parquetRead({
        file,
        metadata,
        rowStart,
        rowEnd: rowStart + groupRows,
        columns: [column.name],
        utf8: false,
        parsers: PARSERS,
        onChunk: ({ columnData, rowStart: chunkStart }) => {
          for (let i = 0; i < columnData.length; i++) data[chunkStart - rowStart + i] = column.value(columnData[i] ?? null);
        },
      });
    } catch (err) {
      throw asInputError(err, context);
    }
    values.push(data);
  }
  return values;
}

/**
 * The turn to decode and hold a row group, answering its release. One row group is held at a time
 * in this process, whoever reads it: with DuckDB's 100,000-row groups each is some 10 MiB of values
 * plus hyparquet's transient arrays, and two segments read side by side would each hold one. Turns
 * are taken in order; a reader releases its turn once its consumer has taken the group's last slice
 * (or stopped reading), so the next reader decodes while the previous one's last rows are scored.
 */
async function takeGroupTurn(): Promise<() => void> {
  const previous = groupTurn;
  let release!: () => void;
  groupTurn = new Promise((resolve) => (release = resolve));
  await previous;
  return release;
}

let groupTurn: Promise<void> = Promise.resolve();

/** Rows yielded at once: the consumer batches them, and waits on its batches, a slice at a time. */
const ROWS_PER_SLICE = 1000;

/** A column with the conversion of its values to JSON-safe ones. */
interface ReadColumn extends ParquetColumn {
  value: (raw: unknown) => unknown;
}

interface OpenParquet {
  file: AsyncBuffer;
  metadata: FileMetaData;
  columns: ReadColumn[];
}

/**
 * hyparquet, loaded where a Parquet file is read: a CSV or JSON Lines run does not hold it. Every
 * module a run loads is live heap that each full collection marks again, and on Node 24 a CPU-bound
 * run's full collections follow each other.
 */
function hyparquet(): Promise<typeof import('hyparquet')> {
  return import('hyparquet');
}

/** Errors of the caller's `read` itself (network, permissions): passed on as they are, never taken for bad input. */
const readFailures = new WeakSet<object>();

async function openParquet(read: RangeRead, size: number, name: string, bounds?: ParquetBounds): Promise<OpenParquet> {
  // 4 bytes of leading magic, 4 of footer length and 4 of trailing magic: anything shorter cannot be Parquet.
  if (size < 12) throw new InputError(`${name}: not a Parquet file (${size} bytes is too short for one)`);
  const file = asyncBuffer(read, size, name);
  const { parquetMetadata, parquetSchema } = await hyparquet();
  let metadata: FileMetaData;
  try {
    metadata = parquetMetadata(await readFooter(file, name, FOOTER_GUESS, bounds));
  } catch (err) {
    throw asInputError(err, `${name}: the Parquet footer cannot be read`);
  }
  const schema = parquetSchema(metadata);
  const columns = schema.children.map((node) => readColumn(node, name));
  for (const group of metadata.row_groups) {
    for (const chunk of group.columns) {
      const codec = chunk.meta_data?.codec;
      if (codec !== undefined && !CODECS.has(codec)) {
        const column = chunk.meta_data?.path_in_schema.join('.') ?? '?';
        throw new InputError(`${name}: column "${column}" is compressed with ${codec}; only uncompressed and SNAPPY Parquet files can be read`);
      }
    }
  }
  return { file, metadata, columns };
}

/** Wraps `read` as hyparquet's AsyncBuffer, checking that every read answers the bytes asked for. */
function asyncBuffer(read: RangeRead, size: number, name: string): AsyncBuffer {
  return {
    byteLength: size,
    async slice(start: number, end = size): Promise<ArrayBuffer> {
      let bytes: Uint8Array;
      try {
        bytes = await read(start, end);
      } catch (err) {
        if (typeof err === 'object' && err !== null) readFailures.add(err);
        throw err;
      }
      if (bytes.byteLength !== end - start) {
        throw new InputError(
          `${name}: reading bytes ${start}-${end} answered ${bytes.byteLength} bytes instead of ${end - start}; the file changed while it was read`,
          'E_INPUT_CHANGED',
        );
      }
      // hyparquet wants an ArrayBuffer of exactly these bytes; a Node Buffer is often a view into a larger
      // pool, and Buffer's slice() is a view too: the Uint8Array constructor copies.
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes.buffer;
      return new Uint8Array(bytes).buffer;
    },
  };
}

/** hyparquet's decoding errors are about the file; the caller's read errors and our own errors keep their identity. */
function asInputError(err: unknown, context: string): unknown {
  if (err instanceof BatchScorerError || (typeof err === 'object' && err !== null && readFailures.has(err))) return err;
  return new InputError(`${context}: ${errorMessage(err)}`);
}

/**
 * The value type of a top-level column, from its logical type, else its converted (legacy) type,
 * else its physical type. Refuses what has no faithful flat JSON value here.
 */
function columnType(node: SchemaTree, fileName: string): ParquetValueType {
  const element: SchemaElement = node.element;
  const refuse = (what: string) =>
    new InputError(
      `${fileName}: column "${element.name}" is ${what}; only flat columns of scalar values (numbers, text, dates, timestamps, JSON, bytes) can be read`,
    );
  const logical = element.logical_type;
  const converted = element.converted_type;
  if (node.children.length > 0) {
    throw refuse(`a nested column (${logical?.type ?? converted ?? 'STRUCT'})`);
  }
  if (element.repetition_type === 'REPEATED') throw refuse(`a repeated ${element.type ?? ''} column (a list)`);
  switch (logical?.type) {
    case 'STRING':
    case 'ENUM':
    case 'UUID':
      return 'string';
    case 'JSON':
      return 'json';
    case 'DATE':
      return 'date';
    case 'TIMESTAMP':
      return 'timestamp';
    case 'DECIMAL':
      return 'double';
    case 'FLOAT16':
      return 'float';
    case 'INTEGER':
      // A UINT_32 exceeds int32's range: numbers, but of int64's.
      return logical.bitWidth === 64 || (logical.bitWidth === 32 && !logical.isSigned) ? 'int64' : 'int32';
    case 'GEOMETRY':
    case 'GEOGRAPHY':
      return 'json'; // hyparquet decodes them to GeoJSON objects
    case 'TIME':
      throw refuse(`a time of day (TIME ${logical.unit})`);
    case 'BSON':
    case 'INTERVAL':
    case 'VARIANT':
    case 'MAP':
    case 'LIST':
      throw refuse(`of type ${logical.type}`);
    default:
  }
  switch (converted) {
    case 'UTF8':
    case 'ENUM':
      return 'string';
    case 'JSON':
      return 'json';
    case 'DATE':
      return 'date';
    case 'TIMESTAMP_MILLIS':
    case 'TIMESTAMP_MICROS':
      return 'timestamp';
    case 'DECIMAL':
      return 'double';
    case 'INT_8':
    case 'INT_16':
    case 'INT_32':
    case 'UINT_8':
    case 'UINT_16':
      return 'int32';
    case 'UINT_32':
    case 'INT_64':
    case 'UINT_64':
      return 'int64';
    case 'TIME_MILLIS':
    case 'TIME_MICROS':
      throw refuse(`a time of day (${converted})`);
    case undefined:
      break;
    default:
      throw refuse(`of type ${converted}`);
  }
  switch (element.type) {
    case 'BOOLEAN':
      return 'boolean';
    case 'INT32':
      return 'int32';
    case 'INT64':
      return 'int64';
    case 'INT96':
      return 'timestamp'; // Impala's and old Spark's timestamps: hyparquet decodes them, as UTC
    case 'FLOAT':
      return 'float';
    case 'DOUBLE':
      return 'double';
    case 'BYTE_ARRAY':
    case 'FIXED_LEN_BYTE_ARRAY':
      return 'binary';
    default:
      throw refuse(`of physical type ${element.type ?? 'none'}`);
  }
}

function readColumn(node: SchemaTree, fileName: string): ReadColumn {
  const type = columnType(node, fileName);
  const element = node.element;
  return { name: element.name, type, value: converter(type, element) };
}

const utf8 = new TextDecoder();

/** The conversion of one column's decoded values (after PARSERS) to JSON-safe values of its type. */
function converter(type: ParquetValueType, element: SchemaElement): (raw: unknown) => unknown {
  const orNull =
    (convert: (raw: unknown) => unknown) =>
    (raw: unknown): unknown =>
      raw === null || raw === undefined ? null : convert(raw);
  switch (type) {
    case 'int64':
      return orNull((raw) => {
        const n = typeof raw === 'bigint' ? raw : BigInt(raw as number);
        return n >= -MAX_SAFE && n <= MAX_SAFE ? Number(n) : n.toString();
      });
    case 'double': {
      const scale = element.converted_type === 'DECIMAL' || element.logical_type?.type === 'DECIMAL' ? (element.scale ?? 0) : 0;
      if (scale === 0) return orNull((raw) => finite(Number(raw)));
      // hyparquet scales by multiplying with 10^-scale, which gives 1.1000000000000001 for 11 at scale 1;
      // dividing the recovered unscaled integer by 10^scale gives the double nearest the decimal.
      const factor = 10 ** scale;
      return orNull((raw) => {
        const unscaled = Math.round((raw as number) * factor);
        return Number.isSafeInteger(unscaled) ? unscaled / factor : raw;
      });
    }
    case 'float':
      return orNull((raw) => finite(shortestFloat(raw as number)));
    case 'string':
      return orNull((raw) => (raw instanceof Uint8Array ? utf8.decode(raw) : String(raw)));
    case 'binary':
      return orNull((raw) =>
        raw instanceof Uint8Array ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') : Buffer.from(String(raw)).toString('base64'),
      );
    case 'date':
      // hyparquet applies dateFromDays for the DATE converted type; a DATE logical type alone reaches here as days.
      return orNull((raw) => (typeof raw === 'number' ? isoDay(raw) : raw));
    case 'timestamp': {
      // Local (naive) times must not claim to be UTC: their ISO form has no zone. Legacy converted
      // types and INT96 carry no flag; the former are UTC by the format's definition, the latter by Spark's.
      const logical = element.logical_type;
      const local = logical?.type === 'TIMESTAMP' && !logical.isAdjustedToUTC;
      return orNull((raw) => (local ? String(raw).replace(/Z$/, '') : raw));
    }
    default:
      return orNull((raw) => raw);
  }
}

/** NaN and the infinities have no JSON number: they are given as the strings 'NaN', 'Infinity' and '-Infinity'. */
function finite(value: number): number | string {
  return Number.isFinite(value) ? value : String(value);
}

/**
 * A 32-bit float as the shortest decimal that reads back to it: 1.1 written as FLOAT is read as
 * 1.100000023841858, a number no one wrote and a model would be sent; 1.1 is the same float.
 */
function shortestFloat(value: number): number {
  if (!Number.isFinite(value)) return value;
  for (let digits = 1; digits < 10; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === value) return candidate;
  }
  return value;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const DAY_MILLIS = 86_400_000;

/**
 * Timestamps and dates decoded straight to their ISO strings: hyparquet's default Date objects
 * would drop microseconds and nanoseconds, which DuckDB, Spark and pandas write.
 */
const PARSERS: Partial<ParquetParsers> = {
  timestampFromMilliseconds: (millis) => isoTimestamp(BigInt(millis) * 1_000_000n),
  timestampFromMicroseconds: (micros) => isoTimestamp(BigInt(micros) * 1_000n),
  timestampFromNanoseconds: (nanos) => isoTimestamp(BigInt(nanos)),
  dateFromDays: (days) => isoDay(Number(days)),
};

/** 'YYYY-MM-DD' of a day count since 1970-01-01. */
function isoDay(days: number): string {
  return isoDate(days * DAY_MILLIS).slice(0, -'T00:00:00.000Z'.length);
}

/** 'YYYY-MM-DDTHH:MM:SS.sssZ' plus the sub-millisecond digits that are not zero. */
function isoTimestamp(nanos: bigint): string {
  // Floor division, so times before 1970 keep a positive sub-millisecond remainder.
  let millis = nanos / 1_000_000n;
  if (millis * 1_000_000n > nanos) millis -= 1n;
  const rest = nanos - millis * 1_000_000n;
  const iso = isoDate(Number(millis));
  if (rest === 0n) return iso;
  return `${iso.slice(0, -1)}${rest.toString().padStart(6, '0').replace(/0+$/, '')}Z`;
}

function isoDate(millis: number): string {
  const date = new Date(millis);
  // Such values (DuckDB's 'infinity', corrupt data) have no ISO form; reported with the file and row group.
  if (Number.isNaN(date.getTime())) throw new RangeError(`a date or timestamp of ${millis} ms since 1970 is out of range`);
  return date.toISOString();
}
