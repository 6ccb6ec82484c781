import { ByteWriter } from './byte-writer.js';
import { DEFAULT_DIALECT, type CsvDialect } from './csv-dialect.js';

/**
 * The formats a segment writes its rows in: the output's own text formats, or `values` (one JSON
 * array of the row's values a line) for outputs that are assembled from parts, such as Parquet.
 */
export type RowWriterFormat = 'csv' | 'jsonl' | 'values';

/** One output row: the input row (its values, or its text as read, and its place) and the prediction values. */
export interface WriterRow {
  row: {
    /** The input row's values by column; a writer with `passThroughText` writes `text` instead, and needs none. */
    record?: Record<string, unknown>;
    /** The row's text as read; written as it was, with the predictions added, when `passThroughText`. */
    text?: string;
    /** 0-based place of the row in the input; its number (written first with `rowNumber`) is one more. */
    index: number;
  };
  predictions: readonly unknown[];
}

/** Output rows as text, in one of the row writer formats. */
export interface RowWriter {
  /** The first line of the file (CSV header), or '' for JSON Lines and values. */
  header(): string;
  /** Lines for rows of input values merged with prediction values, each ending in "\n": text, or its UTF-8 bytes. */
  lines(rows: readonly WriterRow[]): string | Buffer;
}

/** What a writer writes besides the predictions. */
export interface RowWriterOptions {
  /** The input columns written, in order (CSV and values write exactly these). */
  inputColumns: readonly string[];
  /** Names of the prediction values, in order. */
  predictionColumns: readonly string[];
  /** Write the row's number first, as `row_number`. */
  rowNumber: boolean;
  /**
   * Write each row's text as read (JSON Lines, or CSV in this writer's dialect with every column in
   * order), with the predictions added at its end, so that every input value (a 19-digit id too) is
   * written back byte for byte; otherwise rows are written from the input columns chosen.
   */
  passThroughText: boolean;
}

/** The name of the row number column. */
export const ROW_NUMBER_COLUMN = 'row_number';

export function createRowWriter(format: RowWriterFormat, options: RowWriterOptions): RowWriter {
  const { inputColumns, predictionColumns, rowNumber, passThroughText } = options;
  if (format === 'values') {
    return {
      header: () => '',
      lines: (rows) =>
        rows
          .map(({ row, predictions }) => {
            const number = row.index + 1;
            const values = valuesOf(row.record, number);
            return `${JSON.stringify([...(rowNumber ? [number] : []), ...inputColumns.map((c) => values[c] ?? null), ...predictions.map((p) => p ?? null)])}\n`;
          })
          .join(''),
    };
  }
  if (format === 'jsonl') return jsonLinesWriter(options);
  const head = [...(rowNumber ? [ROW_NUMBER_COLUMN] : []), ...inputColumns, ...predictionColumns];
  // A file of one column writes an empty value quoted: an empty line would be read as no row at all.
  const field = head.length === 1 ? (value: unknown) => (value === '' || value === null || value === undefined ? '""' : csvField(value)) : csvField;
  // Lines are written as bytes, a row's text and fields copied into one buffer per call.
  const out = new ByteWriter();
  return {
    header: () => `${head.map(field).join(',')}\n`,
    lines: (rows) => {
      for (let r = 0; r < rows.length; r++) {
        const { row, predictions } = rows[r];
        const { text } = row;
        if (rowNumber) out.number(row.index + 1);
        if (passThroughText && text !== undefined) {
          if (rowNumber) out.byte(COMMA);
          out.text(text);
        } else {
          const values = valuesOf(row.record, row.index + 1);
          for (let c = 0; c < inputColumns.length; c++) {
            if (c > 0 || rowNumber) out.byte(COMMA);
            out.text(field(values[inputColumns[c]]));
          }
        }
        const first = !rowNumber && inputColumns.length === 0;
        for (let p = 0; p < predictions.length; p++) {
          if (p > 0 || !first) out.byte(COMMA);
          const value = predictions[p];
          // A number is a field as String() writes it (never quoted), written without the string.
          if (typeof value === 'number') out.number(value);
          else out.text(field(value));
        }
        out.byte(LF);
      }
      return out.take();
    },
  };
}

/**
 * JSON Lines rows: a row's text as read with the predictions added as members before its closing
 * brace (re-serialising would round numbers JSON.parse cannot hold: 19-digit ids), or, without
 * its text, the input columns chosen and the predictions. Lines are written as bytes into one
 * buffer per call: a batch's lines joined as a string were half a megabyte among the old objects
 * (a large object each), made again as bytes to be written, most of a JSON Lines run's memory.
 */
function jsonLinesWriter({ inputColumns, predictionColumns, rowNumber, passThroughText }: RowWriterOptions): RowWriter {
  // The members added, `"name":` each, in the order JSON.stringify writes an object's (names that are array indexes first).
  const added = Object.keys(Object.fromEntries(predictionColumns.map((c) => [c, 0]))).map((c) => ({
    key: Buffer.from(`${JSON.stringify(c)}:`),
    at: predictionColumns.lastIndexOf(c),
  }));
  const numberKey = Buffer.from(`{"${ROW_NUMBER_COLUMN}":`);
  const out = new ByteWriter();
  /** The added members and the closing brace. */
  const predictionsAdded = (predictions: readonly unknown[]) => {
    for (let m = 0; m < added.length; m++) {
      if (m > 0) out.byte(COMMA);
      out.bytes(added[m].key);
      out.json(predictions[added[m].at]);
    }
    out.byte(CLOSE);
  };
  return {
    header: () => '',
    lines: (rows) => {
      for (let r = 0; r < rows.length; r++) {
        const { row, predictions } = rows[r];
        const { text } = row;
        const number = row.index + 1;
        const last = passThroughText && text !== undefined ? lastOfObject(text) : -1;
        if (last < 0) out.text(recordLine(row.record, number, predictions));
        else {
          // The text up to its last member (its opening brace, when it has none), after the row number.
          const empty = text!.charCodeAt(last) === OPEN;
          if (rowNumber) {
            out.bytes(numberKey);
            out.number(number);
            if (!empty || added.length > 0) out.byte(COMMA);
          }
          out.text(text!, rowNumber ? text!.indexOf('{') + 1 : 0, last + 1);
          if (!empty && added.length > 0) out.byte(COMMA);
          predictionsAdded(predictions);
        }
        out.byte(LF);
      }
      return out.take();
    },
  };

  /** The line of a row written from its values (not its text). */
  function recordLine(record: Record<string, unknown> | undefined, number: number, predictions: readonly unknown[]): string {
    const values = valuesOf(record, number);
    const kept: Record<string, unknown> = {};
    for (const c of inputColumns) if (c in values) kept[c] = values[c];
    predictionColumns.forEach((c, i) => (kept[c] = predictions[i] ?? null));
    const body = JSON.stringify(kept).slice(1);
    return `${rowNumber ? `{"${ROW_NUMBER_COLUMN}":${number}` : '{'}${rowNumber && body !== '}' ? ',' : ''}${body}`;
  }
}

/**
 * Where the last member of a JSON object's text ends (the place of its last character before the
 * closing brace, JSON's spaces aside), or its opening brace when it has none; -1 for a text that
 * does not end in a closing brace (a row read never does), which is then written from its values.
 */
function lastOfObject(text: string): number {
  let at = text.length - 1;
  while (at >= 0 && isJsonSpace(text.charCodeAt(at))) at--;
  if (at < 0 || text.charCodeAt(at) !== CLOSE) return -1;
  at--;
  while (at >= 0 && isJsonSpace(text.charCodeAt(at))) at--;
  return at;
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** A row's values, which a writer not writing its text needs: a row without them is a caller's bug, not missing values. */
function valuesOf(input: Record<string, unknown> | undefined, number: number): Record<string, unknown> {
  if (input === undefined) throw new Error(`row ${number} came to be written without its values`);
  return input;
}

const COMMA = 0x2c;
const LF = 0x0a;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/** Characters that make a CSV field quoted (RFC 4180's, and a BOM, as papaparse quotes them). */
const NEEDS_QUOTES = /[",\r\n\uFEFF]|^ | $/;

/**
 * A value as an RFC 4180 field: CSV input strings unchanged, JSON values as JSON, missing as
 * empty; quoted (quotes doubled) when it holds a delimiter, quote or line break, or starts or ends
 * with a space, which some readers trim.
 */
function csvField(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') text = value;
  else text = JSON.stringify(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** What makes a field quoted besides the delimiter and quote: a line break, a BOM, a space at either end (see NEEDS_QUOTES). */
const QUOTED_FOR = /[\r\n\uFEFF]|^ | $/;

/**
 * The text of a CSV row of these fields in `dialect`, each quoted where the writer quotes one (a
 * delimiter, quote, line break or BOM in it, or a space at either end; the only field of a row,
 * empty): in the writer's dialect, the text it writes for the row's input values; in any, a text
 * that reads back as these fields.
 */
export function csvRowText(fields: readonly string[], dialect: CsvDialect = DEFAULT_DIALECT): string {
  const { delimiter, quote } = dialect;
  const quoted = (f: string) => f.includes(delimiter) || f.includes(quote) || QUOTED_FOR.test(f) || (fields.length === 1 && f === '');
  return fields.map((f) => (quoted(f) ? `${quote}${f.replaceAll(quote, quote + quote)}${quote}` : f)).join(delimiter);
}
