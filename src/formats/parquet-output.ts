import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { SchemaElement } from 'hyparquet';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { ParquetValueType } from './parquet-input.js';

/** A column of the output file: its name and the type of its values (every column may hold nulls). */
export interface ParquetOutputColumn {
  name: string;
  type: ParquetValueType;
}

export interface ParquetOutputOptions {
  /**
   * Rows per row group (default 10,000). One row group is held in memory before it is encoded
   * and written, so this bounds memory; 10,000 rows of a few dozen columns are a few MB, large
   * enough to compress well, and small enough that a reader (this tool's own, DuckDB's) holds
   * one at a time cheaply and splits the file into work units finely.
   */
  rowGroupRows?: number;
  /**
   * The file's created_by (default 'batch-scorer'). It is the only free text of the footer: keep
   * it free of times and ids, so the same rows make the same bytes.
   */
  createdBy?: string;
}

/** A Parquet file being written to a stream. Await each call before making the next. */
export interface ParquetOutput {
  /**
   * Adds rows, each an array of values in column order. Resolves once they are buffered, or, when
   * they complete a row group, once the stream took its bytes (backpressure). Rejects, adding none
   * of the rows, when a row has the wrong number of values or a value does not fit its column.
   */
  writeRows(rows: readonly (readonly unknown[])[]): Promise<void>;
  /** Writes the last row group and the footer, ends the stream and resolves when it has finished. */
  end(): Promise<{ rows: number }>;
}

const DEFAULT_ROW_GROUP_ROWS = 10_000;

/**
 * Writes a Parquet file (SNAPPY, every column OPTIONAL) to `sink`, one row group at a time, so
 * memory stays flat however many rows are written. The same rows, in the same columns and options,
 * make byte-identical files.
 *
 * Values are checked against their column's type, and converted only where no information is lost
 * (see `columnValue`); a value that does not fit throws, naming the column, rather than being
 * written as null.
 */
export function createParquetOutput(sink: Writable, columns: ParquetOutputColumn[], options: ParquetOutputOptions = {}): ParquetOutput {
  const rowGroupRows = options.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS;
  if (!Number.isInteger(rowGroupRows) || rowGroupRows < 1) throw new RangeError(`rowGroupRows must be a positive integer, not ${rowGroupRows}`);
  const names = new Set<string>();
  for (const { name } of columns) {
    if (names.has(name)) throw new Error(`the Parquet output names column "${name}" twice`);
    names.add(name);
  }
  const writer = new SinkWriter(sink);
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }, ...columns.map(schemaElement)];
  const parquet = new ParquetWriter({ writer, schema, createdBy: options.createdBy ?? 'batch-scorer' });
  let buffered: unknown[][] = columns.map(() => []);
  let bufferedRows = 0;
  let written = 0;
  let busy = false;
  let ended = false;

  const writeGroup = async () => {
    if (bufferedRows === 0) return;
    const columnData = columns.map(({ name }, c) => ({ name, data: buffered[c] }));
    // One row group per call, so ParquetWriter flushes (and we await the sink) after each.
    await parquet.write({ columnData, rowGroupSize: bufferedRows });
    written += bufferedRows;
    buffered = columns.map(() => []);
    bufferedRows = 0;
  };

  // Calls overlapping would interleave rows; the caller's await between them is the contract, checked here.
  const exclusive = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    if (ended) throw new Error(`the Parquet output has ended; cannot ${what}`);
    if (busy) throw new Error(`the Parquet output is still writing; await each call before the next (${what})`);
    busy = true;
    try {
      return await work();
    } finally {
      busy = false;
    }
  };

  return {
    writeRows: (rows) =>
      exclusive('write rows', async () => {
        // Every value is checked before any is kept, so a rejected call leaves the output as it was.
        const checked = rows.map((row, r) => {
          if (row.length !== columns.length) {
            throw new Error(`row ${written + bufferedRows + r} of the Parquet output has ${row.length} values for ${columns.length} columns`);
          }
          return columns.map((column, c) => columnValue(column, row[c]));
        });
        for (const row of checked) {
          for (let c = 0; c < columns.length; c++) buffered[c].push(row[c]);
          bufferedRows++;
          if (bufferedRows === rowGroupRows) await writeGroup();
        }
      }),
    end: () =>
      exclusive('end', async () => {
        ended = true;
        await writeGroup();
        // Indexes and footer go into the buffer (ByteWriter's finish does nothing); then they are flushed.
        await parquet.finish();
        await writer.flush();
        sink.end();
        await finished(sink);
        return { rows: written };
      }),
  };
}

/**
 * hyparquet-writer's ByteWriter whose flush (called by ParquetWriter after each row group, and by
 * `end` after the footer) hands the buffered bytes to the Node stream and waits for 'drain' when the stream is
 * full, so a slow sink slows the writer instead of letting bytes pile up in memory.
 */
class SinkWriter extends ByteWriter {
  private failure: Error | undefined;

  constructor(private readonly sink: Writable) {
    super(1 << 16);
    // Kept, and reported by the next flush: an error no one listens for would crash the process.
    sink.on('error', (err) => (this.failure ??= err));
  }

  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.index === 0) return Promise.resolve();
    // Copied: the buffer is reused for the next row group while the stream may still hold this chunk.
    const chunk = Buffer.from(new Uint8Array(this.buffer, 0, this.index));
    this.index = 0;
    if (this.sink.write(chunk)) return Promise.resolve();
    return drained(this.sink);
  }
}

/** Resolves on the stream's next 'drain'; rejects if it fails or closes first. */
function drained(sink: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: Error) => {
      sink.off('drain', onDrain);
      sink.off('error', onError);
      sink.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => settle();
    const onError = (err: Error) => settle(err);
    const onClose = () => settle(new Error('the Parquet output stream closed before the file was written'));
    sink.on('drain', onDrain);
    sink.on('error', onError);
    sink.on('close', onClose);
  });
}

/** The schema element of each value type: the logical type is given too, so readers show DATE, TIMESTAMP, JSON. */
function schemaElement({ name, type }: ParquetOutputColumn): SchemaElement {
  const optional = { name, repetition_type: 'OPTIONAL' } as const;
  switch (type) {
    case 'boolean':
      return { ...optional, type: 'BOOLEAN' };
    case 'int32':
      return { ...optional, type: 'INT32' };
    case 'int64':
      return { ...optional, type: 'INT64' };
    case 'float':
      return { ...optional, type: 'FLOAT' };
    case 'double':
      return { ...optional, type: 'DOUBLE' };
    case 'string':
      return { ...optional, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
    case 'date':
      return { ...optional, type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } };
    case 'timestamp':
      // Instants in UTC, to the microsecond: what DuckDB, Spark and pandas read as a time zone aware timestamp.
      return { ...optional, type: 'INT64', converted_type: 'TIMESTAMP_MICROS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } };
    case 'json':
      return { ...optional, type: 'BYTE_ARRAY', converted_type: 'JSON', logical_type: { type: 'JSON' } };
    case 'binary':
      return { ...optional, type: 'BYTE_ARRAY' };
  }
}

const INTEGER_TEXT = /^[+-]?\d+$/;
/** JSON's number syntax, with an optional '+' and the names String(n) gives the non-finite numbers. */
const NUMBER_TEXT = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]?Infinity)$/;
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const BASE64_TEXT = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DAY_MILLIS = 86_400_000;

/**
 * A value as its column stores it, or an Error naming the column and the value. The rule: null
 * and undefined are null in every column; otherwise a value is converted only when nothing is lost.
 * - string: anything; strings as they are, numbers, booleans and bigints as String(v), a Date as
 *   its ISO string, other values as their JSON.
 * - int32, int64: integers in range, as numbers, bigints or integer strings ('42', '-7').
 * - double, float: numbers, bigints that are exact doubles, and number strings ('0.5', '1e3',
 *   'NaN', '-Infinity'), read as JSON.parse reads them; a float column stores single precision.
 * - boolean: booleans and the strings 'true' and 'false'.
 * - date: 'YYYY-MM-DD', or a Date at midnight UTC.
 * - timestamp: a Date, or an ISO-8601 string ('2024-05-01T12:30:00.123456Z', a space for the 'T',
 *   an offset, or no zone, taken as UTC), to the microsecond; finer non-zero digits are refused.
 * - json: any value JSON.stringify can write (a string is stored as a JSON string, not parsed).
 * - binary: a Uint8Array, or a base64 string (as readParquetRows gives binary values).
 */
function columnValue(column: ParquetOutputColumn, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  const misfit = (why = `is not a ${column.type}`) =>
    new Error(`the value ${describe(value)} of Parquet output column "${column.name}" ${why}; declare the column as 'string' to keep any value`);
  switch (column.type) {
    case 'string':
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
      if (value instanceof Date) return value.toISOString();
      return jsonText(value) ?? throwError(misfit('has no JSON form'));
    case 'int32':
    case 'int64': {
      let n: bigint;
      if (typeof value === 'bigint') n = value;
      else if (typeof value === 'number' && Number.isInteger(value)) n = BigInt(value);
      else if (typeof value === 'string' && INTEGER_TEXT.test(value)) n = BigInt(value);
      else throw misfit('is not an integer');
      const [min, max] = column.type === 'int32' ? [BigInt(INT32_MIN), BigInt(INT32_MAX)] : [INT64_MIN, INT64_MAX];
      if (n < min || n > max) throw misfit(`is outside the ${column.type} range`);
      return column.type === 'int32' ? Number(n) : n;
    }
    case 'double':
    case 'float':
      if (typeof value === 'number') return value;
      if (typeof value === 'bigint' && BigInt(Number(value)) === value) return Number(value);
      if (typeof value === 'string' && NUMBER_TEXT.test(value)) return Number(value);
      throw misfit('is not a number');
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      throw misfit();
    case 'date': {
      if (value instanceof Date && value.getTime() % DAY_MILLIS === 0) return value.getTime() / DAY_MILLIS;
      const match = typeof value === 'string' ? DATE_TEXT.exec(value) : null;
      const millis = match ? utcMillis(match) : undefined;
      if (millis === undefined) throw misfit(`is not a date ('YYYY-MM-DD')`);
      return millis / DAY_MILLIS;
    }
    case 'timestamp': {
      if (value instanceof Date && !Number.isNaN(value.getTime())) return BigInt(value.getTime()) * 1000n;
      const micros = typeof value === 'string' ? timestampMicros(value) : undefined;
      if (micros === undefined) throw misfit('is not an ISO-8601 timestamp (to the microsecond)');
      return micros;
    }
    case 'json':
      // hyparquet-writer writes JSON.stringify of the value; checked here so the error names the column.
      if (jsonText(value) === undefined) throw misfit('has no JSON form');
      return value;
    case 'binary':
      if (value instanceof Uint8Array) return value;
      if (typeof value === 'string' && BASE64_TEXT.test(value)) return new Uint8Array(Buffer.from(value, 'base64'));
      throw misfit('is neither bytes nor base64 text');
  }
}

/** Milliseconds since 1970 of a matched date, or undefined for a day that does not exist (2023-02-30). */
function utcMillis(match: RegExpExecArray): number | undefined {
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  date.setUTCFullYear(year); // Date.UTC reads years 0-99 as 1900-1999
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return date.getTime();
}

/** Microseconds since 1970 of an ISO-8601 timestamp, or undefined when it is not one or is finer than a microsecond. */
function timestampMicros(text: string): bigint | undefined {
  const match = TIMESTAMP_TEXT.exec(text.trim());
  if (!match) return undefined;
  const day = utcMillis(match);
  const [hours, minutes, seconds] = [Number(match[4] ?? 0), Number(match[5] ?? 0), Number(match[6] ?? 0)];
  if (day === undefined || hours > 23 || minutes > 59 || seconds > 59) return undefined;
  const fraction = (match[7] ?? '').padEnd(9, '0');
  if (!fraction.endsWith('000')) return undefined; // nanoseconds: a microsecond column would drop them
  let offsetMinutes = 0;
  const zone = match[8];
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.replace(':', '');
    const [zoneHours, zoneMinutes] = [Number(digits.slice(1, 3)), Number(digits.slice(3, 5) || 0)];
    if (zoneHours > 23 || zoneMinutes > 59) return undefined;
    offsetMinutes = (digits[0] === '-' ? -1 : 1) * (zoneHours * 60 + zoneMinutes);
  }
  const millis = day + ((hours * 60 + minutes - offsetMinutes) * 60 + seconds) * 1000;
  return BigInt(millis) * 1000n + BigInt(fraction.slice(0, 6));
}

/** JSON.stringify's text, or undefined for what it cannot write (functions, symbols, cycles, bigints). */
function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** A value for an error message: JSON where it has one, cut to a readable length. */
function describe(value: unknown): string {
  const text = typeof value === 'bigint' ? `${value}n` : (jsonText(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function throwError(err: Error): never {
  throw err;
}
