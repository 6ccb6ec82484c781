import Papa from 'papaparse';
import { InputError } from '../errors.js';
import { DEFAULT_DIALECT, type CsvDialect } from './csv-dialect.js';
import type { RawRow, RowSyntax } from './row-splitter.js';

/**
 * RFC 4180 as papaparse reads it, in the file's dialect. The delimiter is always given, since
 * guessing it from values splits "a;b;c" into fields; a quote is escaped by doubling it.
 */
function papaConfig(dialect: CsvDialect) {
  return { header: false, newline: '\n', delimiter: dialect.delimiter, quoteChar: dialect.quote, escapeChar: dialect.quote } as const;
}

/** A data row read from the input, or the reason it could not be read. */
export interface InputRow {
  /** 0-based position among the file's data rows: the order of the output. */
  index: number;
  /** 1-based physical line the row starts on. */
  line: number;
  /** The values by column: CSV values are the strings as written, JSON Lines values as parsed. */
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
    if (seen.has(name)) throw new InputError(`${fileName}: the header names column "${name}" twice; column names must be unique`);
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
 * the delimiter (RFC 4180 has nothing else to read in it); rows with quotes go to papaparse
 * together, and where its row split disagrees with ours (odd quoting), each is parsed alone, so
 * rows never shift.
 */
export function parseRows(
  rows: readonly RawRow[],
  firstIndex: number,
  header: readonly string[],
  syntax: RowSyntax,
  dialect: CsvDialect = DEFAULT_DIALECT,
): InputRow[] {
  const texts = rows.map((r) => r.text());
  if (syntax === 'jsonl') return texts.map((text, i) => jsonRow(text, firstIndex + i, rows[i].line));
  const fields = texts.map((text) => (text.includes(dialect.quote) ? undefined : text.split(dialect.delimiter)));
  const quoted = texts.filter((_, i) => fields[i] === undefined);
  if (quoted.length > 0) {
    const CSV = papaConfig(dialect);
    const together = Papa.parse<string[]>(quoted.join('\n'), CSV);
    // Odd quoting can make papaparse split rows elsewhere than we did, even to the same count.
    const alone = together.data.length !== quoted.length || together.errors.length > 0;
    let next = 0;
    for (let i = 0; i < texts.length; i++) {
      if (fields[i] !== undefined) continue;
      const one = alone ? Papa.parse<string[]>(texts[i], CSV).data : undefined;
      fields[i] = one ? (one.length === 1 ? one[0] : []) : together.data[next];
      next++;
    }
  }
  return texts.map((text, i) => {
    const values = fields[i]!;
    const index = firstIndex + i;
    const line = rows[i].line;
    if (values.length !== header.length) {
      return { index, line, text, problem: `expected ${header.length} fields, found ${values.length}` };
    }
    const record: Record<string, unknown> = {};
    for (let c = 0; c < header.length; c++) record[header[c]] = values[c];
    return { index, line, record, text };
  });
}

function jsonRow(text: string, index: number, line: number): InputRow {
  const value = parseJson(text);
  if (isRecord(value)) return { index, line, record: value, text };
  return { index, line, text, problem: value === undefined ? 'not valid JSON' : 'not a JSON object' };
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
