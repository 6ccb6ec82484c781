import Papa from 'papaparse';
import { InputError } from '../errors.js';
import { excerpt, excerptOfBeginning } from '../text-excerpt.js';
import { DEFAULT_DIALECT, type CsvDialect } from './csv-dialect.js';
import { nestedDeeperThan } from './json-depth.js';
import type { RawRow, RowOver, RowSyntax } from './row-splitter.js';

/**
 * RFC 4180 as papaparse reads it, in the file's dialect. The delimiter is always given, since
 * guessing it from values splits "a;b;c" into fields; a quote is escaped by doubling it.
 */
function papaConfig(dialect: CsvDialect) {
  return { header: false, newline: '\n', delimiter: dialect.delimiter, quoteChar: dialect.quote, escapeChar: dialect.quote } as const;
}

/**
 * Levels a JSON Lines row may nest (the row's object is one). A deeper row is quarantined like
 * any other bad row: re-encoding it for the request (JSON.stringify) would overflow the stack at a
 * few thousand levels and fail the whole run, and no tabular model reads such values anyway.
 */
export const MAX_ROW_DEPTH = 64;

/** A data row read from the input, or the reason it could not be read. */
export interface InputRow {
  /** 0-based position among the file's data rows: the order of the output. */
  index: number;
  /** 1-based physical line the row starts on. */
  line: number;
  /**
   * The values by column: CSV values are the strings as written, JSON Lines values as parsed.
   * Absent when the row could not be read (`problem` says why), or where a reader kept only the
   * row's text once it was done with its values (a CSV row's values are `csvRecord` of the text).
   */
  record?: Record<string, unknown>;
  /** Why the row could not be read (wrong field count, bad JSON); such rows are quarantined. */
  problem?: string;
  /**
   * The row's text (without its line ending): errors.jsonl shows it for rows with a problem, and an
   * output that keeps every column in the input's syntax is this text with the predictions added,
   * so that every input value (a 19-digit id too) is written back byte for byte.
   */
  text?: string;
}

/** The column names from a CSV file's first row; rejects empty and repeated names. */
export function parseCsvHeader(row: RawRow, fileName: string, dialect: CsvDialect = DEFAULT_DIALECT): string[] {
  const text = row.text().replace(/^\uFEFF/, '');
  const columns = Papa.parse<string[]>(text, papaConfig(dialect)).data[0] ?? [];
  const seen = new Set<string>();
  columns.forEach((name, i) => {
    if (name.trim() === '') throw new InputError(`${fileName}: the header's column ${i + 1} has no name; name every column`);
    if (seen.has(name)) throw new InputError(`${fileName}: the header names column "${excerpt(name)}" twice; column names must be unique`);
    seen.add(name);
  });
  return columns;
}

/** The keys of a JSON Lines row, or undefined when it is not a JSON object (it will be quarantined). */
export function jsonKeys(row: RawRow): string[] | undefined {
  const value = parseJson(row.text());
  return isRecord(value) ? Object.keys(value) : undefined;
}

/**
 * Parses raw rows into records keyed by the header. A row without a quote is its fields split at
 * the delimiter (RFC 4180 has nothing else to read in it); a row with quotes is read by
 * `quotedRowFields`, and those it leaves (odd quoting) go to papaparse together, and where its row
 * split disagrees with ours, each is parsed alone, so rows never shift.
 *
 * With `unquotedAsText`, every CSV row is left as its text, unread: a reader that takes its values
 * from the text (the request encoder) reads its fields once, saving an object and a string per
 * field, and hands a row it cannot take so (its fields are not the header's, or its quoting is
 * odd) to `readTextRow`, which reads it as this function would have.
 *
 * A row that passed a bound of the splitter's (`over`) is not read: it has the problem
 * `overProblem` tells, and the excerpt of its beginning as its text.
 */
export function parseRows(
  rows: readonly RawRow[],
  firstIndex: number,
  header: readonly string[],
  syntax: RowSyntax,
  dialect: CsvDialect = DEFAULT_DIALECT,
  unquotedAsText = false,
  overProblem: (over: RowOver) => string = tooLong,
): InputRow[] {
  if (!rows.some((row) => row.over)) return parseReadRows(rows, firstIndex, header, syntax, dialect, unquotedAsText);
  return rows.map((row, i) => {
    const index = firstIndex + i;
    if (!row.over) return parseReadRows([row], index, header, syntax, dialect, unquotedAsText)[0];
    return { index, line: row.line, text: excerptOfBeginning(row.text(), row.over.rowBytes), problem: overProblem(row.over) };
  });
}

/** What a row past a bound is said to be, where the caller does not name the setting that set it. */
function tooLong(over: RowOver): string {
  return over.bound === 'field' ? `a field of ${over.fieldBytes} bytes is longer than ${over.limit}` : `its ${over.rowBytes} bytes are more than ${over.limit}`;
}

/** parseRows of rows that are all read (none `over`). */
function parseReadRows(
  rows: readonly RawRow[],
  firstIndex: number,
  header: readonly string[],
  syntax: RowSyntax,
  dialect: CsvDialect,
  unquotedAsText: boolean,
): InputRow[] {
  const texts = rows.map((r) => r.text());
  if (syntax === 'jsonl') return texts.map((text, i) => jsonRow(text, firstIndex + i, rows[i].line));
  if (unquotedAsText) return texts.map((text, i) => ({ index: firstIndex + i, line: rows[i].line, text }));
  return csvRows(texts, (i) => rows[i].line, firstIndex, header, dialect);
}

/**
 * A CSV row `parseRows` left as its text (`unquotedAsText`) and its reader could not take as
 * text: read as parseRows reads it otherwise, into its record or its problem.
 */
export function readTextRow(row: Readonly<InputRow> & { text: string }, header: readonly string[], dialect: CsvDialect): InputRow {
  return csvRows([row.text], () => row.line, row.index, header, dialect)[0];
}

/** CSV rows' texts read into records, or their problems (see parseRows); `lineOf(i)` is text i's line. */
function csvRows(texts: readonly string[], lineOf: (i: number) => number, firstIndex: number, header: readonly string[], dialect: CsvDialect): InputRow[] {
  const fields: (string[] | undefined)[] = texts.map((text) => (text.includes(dialect.quote) ? quotedRowFields(text, dialect) : text.split(dialect.delimiter)));
  const quoted = texts.filter((_, i) => fields[i] === undefined);
  if (quoted.length > 0) {
    const CSV = papaConfig(dialect);
    const together = Papa.parse<string[]>(quoted.join('\n'), CSV);
    // Odd quoting can make papaparse split rows elsewhere than we did, even to the same count.
    const alone = together.data.length !== quoted.length || together.errors.length > 0;
    let next = 0;
    for (let i = 0; i < texts.length; i++) {
      if (fields[i] !== undefined) continue;
      fields[i] = alone ? quotedFields(texts[i], dialect) : together.data[next];
      next++;
    }
  }
  return texts.map((text, i) => {
    const values = fields[i]!;
    const index = firstIndex + i;
    const line = lineOf(i);
    if (values.length !== header.length) return { index, line, text, problem: `expected ${header.length} fields, found ${values.length}` };
    return { index, line, record: toRecord(values, header), text };
  });
}

/** A CSV row's values by column, read from its text as `parseRows` reads it; undefined when its field count is not the header's. */
export function csvRecord(text: string, header: readonly string[], dialect: CsvDialect = DEFAULT_DIALECT): Record<string, unknown> | undefined {
  const values = text.includes(dialect.quote) ? quotedFields(text, dialect) : text.split(dialect.delimiter);
  return values.length === header.length ? toRecord(values, header) : undefined;
}

/**
 * The fields of a row with quotes, read as papaparse reads its text alone, where the row is plain
 * RFC 4180: a quoted field is a whole field, a doubled quote in it stands for one, and a quote
 * inside an unquoted field is text. Undefined for anything else (text after a closing quote, a
 * quote never closed, a line feed outside quotes), which papaparse reads. Papaparse's parse of the
 * rows joined, and its copies, were a tenth of a CPU-bound run's garbage, for rows that are
 * seldom anything but plain (a property test compares the two).
 */
export function quotedRowFields(text: string, dialect: CsvDialect): string[] | undefined {
  const bounds: number[] = [];
  const count = quotedFieldBounds(text, dialect, bounds);
  if (count < 0) return undefined;
  const fields = new Array<string>(count);
  for (let f = 0; f < count; f++) {
    const field = text.slice(bounds[2 * f], bounds[2 * f + 1]);
    fields[f] = isQuotedField(text, bounds[2 * f], dialect) ? field.replaceAll(dialect.quote + dialect.quote, dialect.quote) : field;
  }
  return fields;
}

/**
 * Where the fields of a row with quotes lie, read as `quotedRowFields` reads them, without making
 * them: field `f` is characters `bounds[2f]` to `bounds[2f + 1]` of the text (a quoted field's
 * inside, its quotes still doubled). Answers the number of fields, or -1 where `quotedRowFields`
 * answers undefined. `bounds` is filled from its start; a typed array must have room for them.
 */
export function quotedFieldBounds(text: string, dialect: CsvDialect, bounds: number[] | Int32Array): number {
  const { delimiter, quote } = dialect;
  const q = quote.charCodeAt(0);
  const fixed = !Array.isArray(bounds);
  // The next line feed from `at` on, looked for again only once passed (inside a quoted field).
  let lf = text.indexOf('\n');
  let count = 0;
  for (let at = 0; ;) {
    // The field's characters, and where it ends: at its delimiter, or at the text's end.
    let start = at;
    let end: number;
    let after: number;
    if (text.charCodeAt(at) !== q) {
      const next = text.indexOf(delimiter, at);
      end = after = next === -1 ? text.length : next;
      if (lf !== -1 && lf < at) lf = text.indexOf('\n', at);
      if (lf !== -1 && lf < end) return -1;
    } else {
      let close = text.indexOf(quote, at + 1);
      while (close !== -1 && text.charCodeAt(close + 1) === q) close = text.indexOf(quote, close + 2);
      if (close === -1) return -1;
      start = at + 1;
      end = close;
      after = close + 1;
      if (after < text.length && text.charCodeAt(after) !== delimiter.charCodeAt(0)) return -1;
    }
    if (fixed && 2 * count + 1 >= bounds.length) return -1;
    bounds[2 * count] = start;
    bounds[2 * count + 1] = end;
    count++;
    if (after >= text.length) return count;
    at = after + 1;
  }
}

/** Whether the field starting at `start` (as `quotedFieldBounds` places it) was quoted: a quoted field's inside follows its quote. */
export function isQuotedField(text: string, start: number, dialect: CsvDialect): boolean {
  return start > 0 && text.charCodeAt(start - 1) === dialect.quote.charCodeAt(0);
}

/** A row's fields as papaparse reads its text alone; none where it reads more than one row there (odd quoting). */
function quotedFields(text: string, dialect: CsvDialect): string[] {
  const rows = Papa.parse<string[]>(text, papaConfig(dialect)).data;
  return rows.length === 1 ? rows[0] : [];
}

function toRecord(values: readonly string[], header: readonly string[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let c = 0; c < header.length; c++) record[header[c]] = values[c];
  return record;
}

function jsonRow(text: string, index: number, line: number): InputRow {
  const value = parseJson(text);
  if (!isRecord(value)) return { index, line, text, problem: value === undefined ? 'not valid JSON' : 'not a JSON object' };
  if (mayNest(text) && nestedDeeperThan(value, MAX_ROW_DEPTH)) {
    return { index, line, text, problem: `nested more than ${MAX_ROW_DEPTH} levels deep; flatten the row` };
  }
  return { index, line, record: value, text };
}

/**
 * Whether a row's text (an object) may hold an object or array: most rows are flat, and two native
 * searches tell so at a fraction of walking the parsed row.
 */
function mayNest(text: string): boolean {
  return text.indexOf('[') !== -1 || text.indexOf('{', text.indexOf('{') + 1) !== -1;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
