/**
 * Splits a byte stream into rows without decoding it, and knows where each row starts, so that a
 * run can be planned into byte ranges and each range read on its own (an S3 ranged GET).
 *
 * CSV rows end at a line feed outside quotes (a preceding CR is dropped); a quote opens a quoted
 * field only at the start of a field, as papaparse reads it, so an inch mark in `5'11"` is text.
 * JSON Lines rows end at every line feed. Empty lines are skipped in both. Working on bytes is
 * safe for UTF-8: the bytes of the delimiter and quote (ASCII, see CsvDialect), CR and LF never
 * occur inside a multi-byte character. Other encodings are decoded to UTF-8 before splitting.
 */
import { VALUE_BYTES } from '../text-excerpt.js';
import { checkDialect, DEFAULT_DIALECT, type CsvDialect } from './csv-dialect.js';
import { CR, FieldMeter, FIELD_START, LF, QUOTE_IN_QUOTED, QUOTED, UNQUOTED } from './field-meter.js';

export type RowSyntax = 'csv' | 'jsonl';

const EMPTY = Buffer.alloc(0);

/**
 * The most bytes one field and one row may take (a field and a row as FieldMeter measures them,
 * the row without its line ending). A row past either is still cut where it ends, exactly as
 * without bounds, so bounds never move a row; it comes as its beginning only, marked `over`.
 */
export interface RowBounds {
  maxFieldBytes: number;
  maxRowBytes: number;
}

/** Why a row was not kept: its longest field's bytes, or else its own, passed its bound. */
export interface RowOver {
  bound: 'field' | 'row';
  /** The bound passed (`maxFieldBytes` or `maxRowBytes`). */
  limit: number;
  /** The row's bytes, without its line ending. */
  rowBytes: number;
  /** Its longest field's bytes. */
  fieldBytes: number;
}

/**
 * One row: where its bytes are (without line ending), where it started, and on which physical
 * line. The bytes stay in the chunk they were read in: most rows are only decoded (scoring) or
 * only counted (planning), and a buffer view per row was much of what a row allocated.
 */
export class RawRow {
  /**
   * @param chunk the buffer holding the row's bytes, from `start` to `end`
   * @param offset offset of the row's first byte, counted from the start of the splitter's stream
   * @param line 1-based physical line the row starts on
   * @param over set when the row passed a bound: its bytes are then only its beginning
   */
  constructor(
    private chunk: Buffer,
    private start: number,
    private end: number,
    private startOffset: number,
    private startLine: number,
    readonly over?: RowOver,
  ) {}

  /** Offset of the row's first byte, counted from the start of the splitter's stream. */
  get offset(): number {
    return this.startOffset;
  }

  /** 1-based physical line the row starts on. */
  get line(): number {
    return this.startLine;
  }

  /** This row made another (within bounds): for a splitter whose reader keeps no row (RowSplitter's `reuse`). */
  moveTo(chunk: Buffer, start: number, end: number, offset: number, line: number): this {
    this.chunk = chunk;
    this.start = start;
    this.end = end;
    this.startOffset = offset;
    this.startLine = line;
    return this;
  }

  /** The row's bytes (a view of the chunk). */
  get bytes(): Buffer {
    return this.chunk.subarray(this.start, this.end);
  }

  /** The row's text, decoded as UTF-8. */
  text(): string {
    return this.chunk.toString('utf8', this.start, this.end);
  }
}

export class RowSplitter {
  private state = FIELD_START;
  private carry: Buffer[] = [];
  private carryStart = 0;
  private position = 0;
  private line: number;
  private rowLine: number;
  private quoteLine = 0;
  private carryBytes = 0;
  /** The row being read past once longer than a row may be: its measure, and its beginning, kept. */
  private long: { meter: FieldMeter; beginning: Buffer } | undefined;
  // The dialect as byte values: the loop compares numbers, not strings.
  private readonly delimiter: number;
  private readonly quote: number;
  /** The one row given for every row, with `reuse`. */
  private readonly moving: RawRow | undefined;

  /**
   * @param syntax how rows end
   * @param startOffset offset of the stream's first byte in the whole file (for ranged reads)
   * @param startLine physical line of the stream's first byte
   * @param dialect the CSV delimiter and quote (ignored for JSON Lines); throws when checkDialect would
   * @param bounds the most a field and a row may take; none: rows of any length are held whole
   * @param reuse one RawRow is given for every row within bounds, moved from row to row: for a
   *   reader that keeps no row past its `onRow` call (planning, which counts rows, made one object
   *   per row of the file for nothing)
   */
  constructor(
    private readonly syntax: RowSyntax,
    startOffset = 0,
    startLine = 1,
    dialect: CsvDialect = DEFAULT_DIALECT,
    private readonly bounds?: RowBounds,
    reuse = false,
  ) {
    this.moving = reuse ? new RawRow(EMPTY, 0, 0, 0, 0) : undefined;
    checkDialect(dialect);
    this.delimiter = dialect.delimiter.charCodeAt(0);
    this.quote = dialect.quote.charCodeAt(0);
    this.position = startOffset;
    this.carryStart = startOffset;
    this.line = startLine;
    this.rowLine = startLine;
  }

  /**
   * Feeds a chunk; calls `onRow` for every row it completes, in order. A line with no quote byte
   * ends at its line feed, found by a native search; only rows holding a quote go through the
   * byte-by-byte reading of quoting (JSON Lines rows never do).
   */
  push(chunk: Buffer, onRow: (row: RawRow) => void): void {
    const csv = this.syntax === 'csv';
    let rowStart = this.long ? this.readPastLong(chunk, onRow) : 0;
    let i = rowStart;
    let nextQuote = csv ? chunk.indexOf(this.quote) : -1;
    while (i < chunk.length) {
      if (this.state !== QUOTED) {
        if (nextQuote !== -1 && nextQuote < i) nextQuote = chunk.indexOf(this.quote, i);
        const lf = chunk.indexOf(LF, i);
        if (lf !== -1 && (nextQuote === -1 || nextQuote > lf)) {
          rowStart = i = this.endRow(chunk, rowStart, lf, onRow);
          continue;
        }
        if (lf === -1 && nextQuote === -1) {
          // The rest holds no row end and no quote: only whether it ends on a delimiter matters.
          this.state = chunk[chunk.length - 1] === this.delimiter ? FIELD_START : UNQUOTED;
          break;
        }
      }
      // A row with a quote in it. Up to that quote (no line feed comes before it) a byte only tells
      // whether the next one starts a field, so the last one alone is read; from the quote on, the
      // row is read to its end a byte at a time.
      if (this.state !== QUOTED && nextQuote > i) {
        this.state = chunk[nextQuote - 1] === this.delimiter ? FIELD_START : UNQUOTED;
        i = nextQuote;
      }
      for (; i < chunk.length; i++) {
        if (this.step(chunk[i])) {
          rowStart = i = this.endRow(chunk, rowStart, i, onRow);
          break;
        }
      }
    }
    if (rowStart < chunk.length) this.keep(chunk.subarray(rowStart));
    this.position += chunk.length;
  }

  /** Holds the start of a row the chunk does not end; a row longer than a row may be is read past instead. */
  private keep(part: Buffer): void {
    this.carry.push(part);
    this.carryBytes += part.length;
    // One byte more than the bound: a CR before the line feed is not the row's.
    if (this.bounds === undefined || this.carryBytes <= this.bounds.maxRowBytes + 1) return;
    const meter = this.meter();
    for (const held of this.carry) meter.read(held, 0);
    // A copy: the chunks held go.
    this.long = { meter, beginning: Buffer.concat(this.carry, Math.min(this.carryBytes, VALUE_BYTES)) };
    this.carry = [];
    this.carryBytes = 0;
  }

  /** Reads the long row on to its end, if the chunk holds it, and emits its beginning; answers where the next row starts. */
  private readPastLong(chunk: Buffer, onRow: (row: RawRow) => void): number {
    const { meter, beginning } = this.long!;
    const lf = meter.read(chunk, 0);
    this.line = this.rowLine + meter.quotedLines;
    if (lf === -1) return chunk.length;
    this.long = undefined;
    onRow(this.overRow(beginning, this.overOf(meter)!));
    return this.nextRow(lf);
  }

  /** The row passing a bound that started at `carryStart`, as its beginning. */
  private overRow(beginning: Buffer, over: RowOver): RawRow {
    return new RawRow(beginning, 0, beginning.length, this.carryStart, this.rowLine, over);
  }

  private meter(): FieldMeter {
    return new FieldMeter(this.syntax, this.delimiter, this.quote);
  }

  /** Which bound, if any, a row the meter read to its end passes. */
  private overOf(meter: FieldMeter): RowOver | undefined {
    const { maxFieldBytes, maxRowBytes } = this.bounds!;
    const fieldBytes = meter.longestField;
    const rowBytes = meter.rowBytes;
    if (fieldBytes > maxFieldBytes) return { bound: 'field', limit: maxFieldBytes, rowBytes, fieldBytes };
    return rowBytes > maxRowBytes ? { bound: 'row', limit: maxRowBytes, rowBytes, fieldBytes } : undefined;
  }

  /** Reads one byte of CSV; answers whether it is the line feed that ends the row. */
  private step(b: number): boolean {
    switch (this.state) {
      case QUOTED:
        if (b === this.quote) this.state = QUOTE_IN_QUOTED;
        else if (b === LF) this.line++;
        return false;
      case FIELD_START:
        if (b === this.quote) {
          this.state = QUOTED;
          this.quoteLine = this.line;
          return false;
        }
        break;
      case QUOTE_IN_QUOTED:
        if (b === this.quote) {
          this.state = QUOTED;
          return false;
        }
        break;
    }
    if (b === this.delimiter) this.state = FIELD_START;
    else if (b !== LF) this.state = UNQUOTED;
    return b === LF;
  }

  /** Emits the row ending at the line feed at `lf`; answers where the next row starts. */
  private endRow(chunk: Buffer, rowStart: number, lf: number, onRow: (row: RawRow) => void): number {
    this.emit(chunk, rowStart, lf, onRow);
    return this.nextRow(lf);
  }

  /** Starts the row after the line feed at `lf` of the chunk being read; answers where it starts. */
  private nextRow(lf: number): number {
    this.line++;
    this.state = FIELD_START;
    this.carryStart = this.position + lf + 1;
    this.rowLine = this.line;
    return lf + 1;
  }

  /**
   * Ends the stream: emits a last row without a line ending. Answers the line on which a quoted
   * field was opened and never closed, or undefined when the stream ended cleanly.
   */
  end(onRow: (row: RawRow) => void): { unterminatedQuoteLine?: number } {
    if (this.long) {
      const { meter, beginning } = this.long;
      if (meter.inQuotes) return { unterminatedQuoteLine: this.rowLine + meter.quoteOpenedAfter };
      this.long = undefined;
      onRow(this.overRow(beginning, this.overOf(meter)!));
      return {};
    }
    if (this.state === QUOTED) return { unterminatedQuoteLine: this.quoteLine };
    this.emit(EMPTY, 0, 0, onRow);
    return {};
  }

  /** The physical line being read, for messages. */
  get currentLine(): number {
    return this.line;
  }

  private emit(chunk: Buffer, start: number, end: number, onRow: (row: RawRow) => void): void {
    if (this.carry.length > 0) {
      chunk = Buffer.concat([...this.carry, chunk.subarray(start, end)]);
      [start, end] = [0, chunk.length];
      this.carry = [];
      this.carryBytes = 0;
    }
    const over = this.bounds && end - start > Math.min(this.bounds.maxFieldBytes, this.bounds.maxRowBytes) ? this.measure(chunk, start, end) : undefined;
    if (end > start && chunk[end - 1] === CR) end--;
    if (end === start) return;
    // A row passing a bound keeps a copy of its beginning, not the chunk it is in.
    if (over) onRow(this.overRow(Buffer.from(chunk.subarray(start, Math.min(end, start + VALUE_BYTES))), over));
    else if (this.moving) onRow(this.moving.moveTo(chunk, start, end, this.carryStart, this.rowLine));
    else onRow(new RawRow(chunk, start, end, this.carryStart, this.rowLine));
  }

  /** Which bound, if any, the row of bytes `start` to `end` (its CR still on) passes. */
  private measure(chunk: Buffer, start: number, end: number): RowOver | undefined {
    const meter = this.meter();
    meter.read(chunk.subarray(start, end), 0);
    return this.overOf(meter);
  }
}

/**
 * The rows of a byte stream as `splitter` cuts them, a chunk's rows at a time (a chunk that
 * completes none yields nothing), the last row once the stream has ended.
 */
export async function* splitRawRows(bytes: AsyncIterable<Buffer>, splitter: RowSplitter): AsyncGenerator<RawRow[]> {
  let rows: RawRow[] = [];
  const collect = (row: RawRow) => rows.push(row);
  for await (const chunk of bytes) {
    splitter.push(chunk, collect);
    if (rows.length > 0) yield rows;
    rows = [];
  }
  splitter.end(collect);
  if (rows.length > 0) yield rows;
}
