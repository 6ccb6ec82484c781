import type { RowSyntax } from './row-splitter.js';

export const LF = 0x0a;
export const CR = 0x0d;
const BACKSLASH = 0x5c;
const JSON_QUOTE = 0x22;

// CSV's reading states, RowSplitter's too: a quote opens a quoted field only at a field's start.
export const FIELD_START = 0;
export const UNQUOTED = 1;
export const QUOTED = 2;
export const QUOTE_IN_QUOTED = 3;
// JSON Lines: outside strings, in one, just after a backslash in one.
const OUTSIDE = 4;
const IN_STRING = 5;
const ESCAPED = 6;

/**
 * Measures the fields of one row as its bytes come, holding none of them: the longest field, the
 * row's bytes, and where the row ends. A CSV field is its bytes between delimiters as written
 * (its quotes included); a JSON Lines field is one string, a key or a value, between its quotes
 * as written. A CSV row ends at a line feed outside quotes, a JSON Lines row at any line feed.
 *
 * RowSplitter measures a row this way when it is longer than a field may be, and reads a row
 * longer than a row may be to its end with it, without keeping it.
 */
export class FieldMeter {
  private state: number;
  private field = 0;
  private longest = 0;
  private last = -1;
  /** Bytes of the row read so far (its line ending aside). */
  bytes = 0;
  /** Line feeds read inside quoted fields, so far. */
  quotedLines = 0;
  /** `quotedLines` when the quoted field still open was opened. */
  quoteOpenedAfter = 0;

  constructor(
    private readonly syntax: RowSyntax,
    private readonly delimiter: number,
    private readonly quote: number,
  ) {
    this.state = syntax === 'csv' ? FIELD_START : OUTSIDE;
  }

  /**
   * Reads `chunk` from `from` on: answers the index of the line feed ending the row (not read), or
   * -1 when the row goes on past the chunk.
   */
  read(chunk: Buffer, from: number): number {
    const end = this.syntax === 'csv' ? this.readCsv(chunk, from) : this.readJson(chunk, from);
    const stop = end === -1 ? chunk.length : end;
    this.bytes += stop - from;
    if (stop > from) this.last = chunk[stop - 1];
    return end;
  }

  /** Whether the row so far ends inside a quoted field. */
  get inQuotes(): boolean {
    return this.state === QUOTED;
  }

  /** The longest field of the row read: a CR before its line ending is not the last field's. */
  get longestField(): number {
    const open = this.last === CR ? this.field - 1 : this.field;
    return Math.max(this.longest, open);
  }

  /** The row's bytes without the CR of a CRLF ending. */
  get rowBytes(): number {
    return this.last === CR ? this.bytes - 1 : this.bytes;
  }

  private readCsv(chunk: Buffer, from: number): number {
    const { delimiter, quote } = this;
    // A stretch with no delimiter, quote or line feed is all one field: found by native searches.
    if (this.state !== QUOTED && chunk.indexOf(LF, from) === -1 && chunk.indexOf(quote, from) === -1 && chunk.indexOf(delimiter, from) === -1) {
      if (chunk.length > from) this.state = UNQUOTED;
      this.field += chunk.length - from;
      return -1;
    }
    for (let i = from; i < chunk.length; i++) {
      if (this.state === QUOTED) {
        i = this.readQuoted(chunk, i);
        continue;
      }
      const b = chunk[i];
      if (b === LF) return i;
      if (b === delimiter) {
        this.endField();
        this.state = FIELD_START;
        continue;
      }
      if (b === quote && this.state !== UNQUOTED) {
        if (this.state === FIELD_START) this.quoteOpenedAfter = this.quotedLines;
        this.state = QUOTED;
      } else this.state = UNQUOTED;
      this.field++;
    }
    return -1;
  }

  /** Reads a quoted field's inside from `i` to its next quote (read too); answers the index of the last byte read. */
  private readQuoted(chunk: Buffer, i: number): number {
    const close = chunk.indexOf(this.quote, i);
    const end = close === -1 ? chunk.length : close;
    for (let lf = chunk.indexOf(LF, i); lf !== -1 && lf < end; lf = chunk.indexOf(LF, lf + 1)) this.quotedLines++;
    this.field += end - i;
    if (close === -1) return chunk.length;
    this.state = QUOTE_IN_QUOTED;
    this.field++;
    return close;
  }

  private readJson(chunk: Buffer, from: number): number {
    const lf = chunk.indexOf(LF, from);
    const to = lf === -1 ? chunk.length : lf;
    // The next quote and backslash, searched for again only once passed.
    let quote = -1;
    let backslash = -1;
    for (let i = from; i < to;) {
      if (this.state === ESCAPED) {
        this.state = IN_STRING;
        this.field++;
        i++;
        continue;
      }
      if (quote < i) quote = nextOf(chunk, JSON_QUOTE, i, to);
      if (this.state === OUTSIDE) {
        if (quote === to) break;
        this.state = IN_STRING;
        i = quote + 1;
        continue;
      }
      if (backslash < i) backslash = nextOf(chunk, BACKSLASH, i, to);
      const at = Math.min(quote, backslash);
      this.field += at - i;
      if (at === to) break;
      if (at === quote) {
        this.endField();
        this.state = OUTSIDE;
      } else {
        this.state = ESCAPED;
        this.field++;
      }
      i = at + 1;
    }
    return lf;
  }

  private endField(): void {
    if (this.field > this.longest) this.longest = this.field;
    this.field = 0;
  }
}

/** Where `byte` next is in `chunk` from `from` on, or `to` when not before it. */
function nextOf(chunk: Buffer, byte: number, from: number, to: number): number {
  const at = chunk.indexOf(byte, from);
  return at === -1 || at > to ? to : at;
}
