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
import { checkDialect, DEFAULT_DIALECT, type CsvDialect } from './csv-dialect.js';

export type RowSyntax = 'csv' | 'jsonl';

/** One row: its bytes (without line ending), where it started, and on which physical line. */
export interface RawRow {
  bytes: Buffer;
  /** Offset of the row's first byte, counted from the start of the splitter's stream. */
  offset: number;
  /** 1-based physical line the row starts on. */
  line: number;
}

const LF = 0x0a;
const CR = 0x0d;

const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
const QUOTE_IN_QUOTED = 3;

export class RowSplitter {
  private state = FIELD_START;
  private carry: Buffer[] = [];
  private carryStart = 0;
  private position = 0;
  private line: number;
  private rowLine: number;
  private quoteLine = 0;
  // The dialect as byte values: the loop compares numbers, not strings.
  private readonly delimiter: number;
  private readonly quote: number;

  /**
   * @param syntax how rows end
   * @param startOffset offset of the stream's first byte in the whole file (for ranged reads)
   * @param startLine physical line of the stream's first byte
   * @param dialect the CSV delimiter and quote (ignored for JSON Lines); throws when checkDialect would
   */
  constructor(
    private readonly syntax: RowSyntax,
    startOffset = 0,
    startLine = 1,
    dialect: CsvDialect = DEFAULT_DIALECT,
  ) {
    checkDialect(dialect);
    this.delimiter = dialect.delimiter.charCodeAt(0);
    this.quote = dialect.quote.charCodeAt(0);
    this.position = startOffset;
    this.carryStart = startOffset;
    this.line = startLine;
    this.rowLine = startLine;
  }

  /** Feeds a chunk; calls `onRow` for every row it completes, in order. */
  push(chunk: Buffer, onRow: (row: RawRow) => void): void {
    let rowStartInChunk = 0;
    const csv = this.syntax === 'csv';
    const quote = this.quote;
    const delimiter = this.delimiter;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      if (csv) {
        switch (this.state) {
          case QUOTED:
            if (b === quote) this.state = QUOTE_IN_QUOTED;
            else if (b === LF) this.line++;
            continue;
          case FIELD_START:
            if (b === quote) {
              this.state = QUOTED;
              this.quoteLine = this.line;
              continue;
            }
            break;
          case QUOTE_IN_QUOTED:
            if (b === quote) {
              this.state = QUOTED;
              continue;
            }
            break;
        }
        if (b === delimiter) {
          this.state = FIELD_START;
          continue;
        }
        if (b !== LF) {
          this.state = UNQUOTED;
          continue;
        }
      } else if (b !== LF) {
        continue;
      }
      // A line feed that ends a row.
      const part = chunk.subarray(rowStartInChunk, i);
      this.emit(part, onRow);
      this.line++;
      this.state = FIELD_START;
      rowStartInChunk = i + 1;
      this.carryStart = this.position + i + 1;
      this.rowLine = this.line;
    }
    if (rowStartInChunk < chunk.length) this.carry.push(chunk.subarray(rowStartInChunk));
    this.position += chunk.length;
  }

  /**
   * Ends the stream: emits a last row without a line ending. Answers the line on which a quoted
   * field was opened and never closed, or undefined when the stream ended cleanly.
   */
  end(onRow: (row: RawRow) => void): { unterminatedQuoteLine?: number } {
    if (this.state === QUOTED) return { unterminatedQuoteLine: this.quoteLine };
    this.emit(Buffer.alloc(0), onRow);
    return {};
  }

  /** The physical line being read, for messages. */
  get currentLine(): number {
    return this.line;
  }

  private emit(tail: Buffer, onRow: (row: RawRow) => void): void {
    let bytes = this.carry.length === 0 ? tail : Buffer.concat([...this.carry, tail]);
    this.carry = [];
    if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
    if (bytes.length === 0) return;
    onRow({ bytes, offset: this.carryStart, line: this.rowLine });
  }
}
