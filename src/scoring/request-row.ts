import { ByteWriter, type CsvDialect, type InputRow, isQuotedField, quotedFieldBounds, readTextRow } from '../formats/index.js';

const CANONICAL_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A CSV value as the model should see it: empty is null (NaN is not JSON, and the service
 * reads null as missing), a canonical number is a number, anything else stays text, so "00123",
 * "1e999", "1e-999" and integers beyond 2^53 (long ids) keep their meaning. JSON Lines values
 * pass as they are.
 */
export function requestValue(value: unknown, fromCsv: boolean): unknown {
  if (!fromCsv) return value === undefined ? null : value;
  if (typeof value !== 'string') return value;
  const text = value;
  if (text === '') return null;
  // Most text is not a number: one character says so before the pattern is tried.
  if (mayBeNumber(text.charCodeAt(0)) && CANONICAL_NUMBER.test(text)) {
    const n = Number(text);
    const underflow = n === 0 && /[1-9]/.test(text.replace(/[eE].*$/, ''));
    const unsafe = Number.isInteger(n) && !Number.isSafeInteger(n);
    if (Number.isFinite(n) && !underflow && !unsafe) return n;
  }
  return text;
}

/** Whether a CSV value starting with this character code may be a canonical number: only `-` and digits start one. */
function mayBeNumber(first: number): boolean {
  return first === 0x2d || (first >= 0x30 && first <= 0x39);
}

/**
 * Encodes request rows as UTF-8 JSON straight into bytes: the model's input columns only, plus the
 * row id member the server echoes (when there is one), which wins over an input column of the same
 * name. The bytes are what `JSON.stringify` would write for the row's object of `requestValue`s.
 *
 * Written byte by byte rather than built as a string per row: the strings (a concatenation per
 * member, then the body joined and encoded again) were most of the CPU a row cost before its
 * request, and, living until the answer came, most of what the collector had to keep.
 */
export class RequestEncoder {
  private readonly columns: string[];
  /** Each member's `{"name":` or `,"name":` as UTF-8, written before its value. */
  private readonly keys: Buffer[];
  private readonly idKey: Buffer | undefined;
  private readonly out = new ByteWriter();
  /** For rows given as CSV text: each sent column's place among the file's fields (-1: not in the file). */
  private readonly fieldOf: number[];
  /** For rows given as CSV text: where each field starts, and where the one after the last would. */
  private readonly starts: Int32Array;
  /** For rows given as CSV text with quotes: where each field's characters start and end (see quotedFieldBounds). */
  private readonly bounds: Int32Array;
  /**
   * With `keepValues`, the last row's values as sent, one per `inputs` column (null where empty or
   * absent): what the input profile counts, taken as each value is encoded rather than read again.
   */
  readonly values: unknown[] | undefined;

  /**
   * @param sent the input columns the model reads, in the order they are sent
   * @param fromCsv values are CSV text, read by `requestValue`; JSON Lines values are sent as they are
   * @param rowIdMember the member carrying the row id, or undefined when the server echoes none
   * @param csv the file's columns and dialect, for rows given as their text (`encodeText`)
   * @param keepValues keep each row's values in `values`
   */
  constructor(
    sent: readonly string[],
    private readonly fromCsv: boolean,
    rowIdMember: string | undefined,
    private readonly csv?: { columns: readonly string[] } & CsvDialect,
    keepValues = false,
  ) {
    this.columns = inputColumns(sent, rowIdMember);
    this.values = keepValues ? Array<unknown>(this.columns.length).fill(null) : undefined;
    this.keys = this.columns.map((c, i) => Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(c)}:`));
    this.idKey = rowIdMember === undefined ? undefined : Buffer.from(`${this.columns.length === 0 ? '{' : ','}${JSON.stringify(rowIdMember)}:`);
    this.fieldOf = this.columns.map((c) => csv?.columns.indexOf(c) ?? -1);
    this.starts = new Int32Array((csv?.columns.length ?? 0) + 1);
    this.bounds = new Int32Array(2 * (csv?.columns.length ?? 0));
  }

  /**
   * Encodes a row that was read, from its record or its text (see encodeText); a row given as text
   * that cannot be encoded from it is read as parseRows reads it first (see readTextRow). Answers
   * the row as read: with its problem, nothing encoded, where reading found one.
   */
  encodeRow(row: InputRow): InputRow {
    if (row.record) {
      this.encode(row.record, row.index);
      return row;
    }
    if (this.encodeText(row.text!, row.index) >= 0) return row;
    const read = readTextRow(row as InputRow & { text: string }, this.csv!.columns, this.csv!);
    if (read.record) this.encode(read.record, read.index);
    return read;
  }

  /** Encodes a row; answers its length in bytes. The row is kept until the next call (`appendTo`, `text`). */
  encode(record: Readonly<Record<string, unknown>>, rowId: number): number {
    const { columns, keys, out } = this;
    out.reset();
    for (let i = 0; i < columns.length; i++) {
      out.bytes(keys[i]);
      this.value(record[columns[i]], i);
    }
    return this.end(rowId);
  }

  /**
   * Encodes a CSV row given as its text: the bytes `encode` writes for the row's record, without
   * making the record or a string per field. A row without quotes is its fields between
   * delimiters; one with quotes, as `quotedFieldBounds` reads it. Answers -1, encoding nothing,
   * when the row is not as many fields as the file has columns read so (see readTextRow).
   */
  encodeText(text: string, rowId: number): number {
    const { columns, keys, out, fieldOf } = this;
    const { csv } = this;
    if (csv === undefined) throw new Error("RequestEncoder.encodeText needs the file's columns");
    if (text.includes(csv.quote)) return this.encodeQuoted(text, rowId, csv);
    const { starts } = this;
    let fields = 1;
    for (let at = text.indexOf(csv.delimiter); at !== -1 && fields < starts.length; at = text.indexOf(csv.delimiter, at + 1)) starts[fields++] = at + 1;
    if (fields !== starts.length - 1) return -1;
    starts[fields] = text.length + 1;
    out.reset();
    for (let i = 0; i < columns.length; i++) {
      out.bytes(keys[i]);
      const f = fieldOf[i];
      if (f >= 0) this.csvValue(text, starts[f], starts[f + 1] - 1, i);
      else this.absent(i);
    }
    return this.end(rowId);
  }

  /** `encodeText` for a row with quotes: a quoted field's inside is its value, a doubled quote in it one quote. */
  private encodeQuoted(text: string, rowId: number, dialect: CsvDialect & { columns: readonly string[] }): number {
    const { columns, keys, out, fieldOf, bounds } = this;
    if (quotedFieldBounds(text, dialect, bounds) !== dialect.columns.length) return -1;
    out.reset();
    for (let i = 0; i < columns.length; i++) {
      out.bytes(keys[i]);
      const f = fieldOf[i];
      if (f < 0) {
        this.absent(i);
        continue;
      }
      const start = bounds[2 * f];
      const end = bounds[2 * f + 1];
      const quote = isQuotedField(text, start, dialect) ? text.indexOf(dialect.quote, start) : -1;
      // Without a quote inside, the value is the characters as they stand; with one, it is text (no number holds a quote).
      if (quote === -1 || quote >= end) this.csvValue(text, start, end, i);
      else {
        const value = text.slice(start, end).replaceAll(dialect.quote + dialect.quote, dialect.quote);
        out.jsonString(value);
        if (this.values) this.values[i] = value;
      }
    }
    return this.end(rowId);
  }

  /** The length in bytes of the last row encoded. */
  get length(): number {
    return this.out.length;
  }

  /** Writes the last row encoded into `target`. */
  appendTo(target: ByteWriter): void {
    target.append(this.out);
  }

  /** The last row encoded, as text. */
  text(): string {
    return this.out.toString();
  }

  /** Ends the row: its id member, if any, and the closing brace; answers its length. */
  private end(rowId: number): number {
    const { out } = this;
    if (this.idKey !== undefined) {
      out.bytes(this.idKey);
      out.number(rowId);
    }
    if (out.length === 0) out.byte(0x7b);
    out.byte(0x7d);
    return out.length;
  }

  /** Column `i`, not in the file: null. */
  private absent(i: number): void {
    this.out.text('null');
    if (this.values) this.values[i] = null;
  }

  /** Column `i`'s value of a record. */
  private value(value: unknown, i: number): void {
    if (typeof value === 'string' && this.fromCsv) return this.csvValue(value, 0, value.length, i);
    if (this.values) this.values[i] = value === undefined || (typeof value === 'number' && !Number.isFinite(value)) ? null : value;
    this.out.json(value);
  }

  /** Characters `start` to `end` of `s`, column `i`'s value in CSV, as `requestValue` reads it. */
  private csvValue(s: string, start: number, end: number, i: number): void {
    const { out, values } = this;
    if (start === end) {
      if (values) values[i] = null;
      return out.text('null');
    }
    // An integer of at most 15 digits is sent as written, which is how String(Number(text)) writes it.
    const integer = shortInteger(s, start, end);
    if (!Number.isNaN(integer)) {
      if (values) values[i] = integer;
      return out.text(s, start, end);
    }
    // Text that cannot be a number is written from its place, without a string of its own.
    if (mayBeNumber(s.charCodeAt(start))) {
      const v = requestValue(s.slice(start, end), true);
      if (typeof v === 'number') {
        if (values) values[i] = v;
        return out.number(v);
      }
    }
    if (values) values[i] = s.slice(start, end);
    out.jsonString(s, start, end);
  }
}

/** The input columns sent as members: all of `sent` but the row id member, which is written last. */
export function inputColumns(sent: readonly string[], rowIdMember: string | undefined): string[] {
  return sent.filter((c) => c !== rowIdMember);
}

/**
 * The value of characters `start` to `end` of `s` when they are `-?(0|[1-9]\d*)` of at most 15
 * digits, "-0" aside: a number JSON and String(Number(text)) write the same, and exact. NaN for
 * anything else. Read in the one pass that checks the digits.
 */
function shortInteger(s: string, start: number, end: number): number {
  const sign = s.charCodeAt(start) === 0x2d ? 1 : 0;
  const digits = end - start - sign;
  if (digits === 0 || digits > 15) return NaN;
  const first = s.charCodeAt(start + sign);
  if (first === 0x30) return digits === 1 && sign === 0 ? 0 : NaN;
  let n = 0;
  for (let i = start + sign; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return NaN;
    n = n * 10 + (c - 0x30);
  }
  return sign === 1 ? -n : n;
}

/** Whether an answer's row id member carries the id that was sent (a server may echo it re-typed, as text). */
export function echoesRowId(echoed: unknown, rowId: number): boolean {
  return echoed === rowId || echoed === String(rowId);
}
