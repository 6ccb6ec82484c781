import { EXACT_POWERS_OF_TEN, NestedTooDeep } from '../formats/index.js';

/** An element of the array that is not an object: the value itself, so an error can show it. */
export class NotAnObject {
  constructor(readonly value: unknown) {}
}

/** One element of the array: its chosen members' values in the order asked (undefined when absent), or what it was instead. */
export type PickedRow = unknown[] | NotAnObject;

/**
 * Reads the chosen members of each object of a JSON array, without building the objects.
 *
 * A predict answer is most of the bytes a run receives, and most of it is members a run does not
 * write (the echoed inputs, the explain text): parsing it all into objects cost as much CPU as
 * everything else a row needs, and the objects' garbage most of the collector's work. So the
 * body's bytes are read where they are (JSON's syntax is ASCII, and no byte of a multi-byte UTF-8
 * character is), members not asked for are stepped over, and only the values asked for are
 * decoded, as JSON.parse would. The body is not turned into a string first: an answer of a
 * thousand rows is half a megabyte, which the collector allocates among long-lived objects.
 *
 * The document's structure is checked throughout (brackets, commas, colons, strings closed), so a
 * cut or garbled body is refused with a SyntaxError; a value not asked for is checked only for
 * where it ends. A repeated member takes its last value, as in JSON.parse.
 */
export function pickMembers(body: Buffer, members: readonly string[], maxDepth = Infinity): PickedRow[] {
  return new Reader(
    body,
    members.map((m) => Buffer.from(m, 'utf8')),
    maxDepth,
  ).array();
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;

class Reader {
  private at = 0;
  /** Whether the last string stepped over holds an escape. */
  private escapes = false;
  /** The names by their length in bytes, so that most members are told apart by their name's length alone. */
  private readonly byLength: number[][] = [];

  constructor(
    private readonly body: Buffer,
    private readonly names: readonly Buffer[],
    /** Levels arrays and objects may nest, the answer's own array the first: past it, NestedTooDeep (counted as the values are stepped over, so no second pass). */
    private readonly maxDepth: number,
  ) {
    names.forEach((name, n) => (this.byLength[name.length] ??= []).push(n));
  }

  array(): PickedRow[] {
    const rows: PickedRow[] = [];
    if (this.maxDepth < 1) throw new NestedTooDeep(this.maxDepth);
    this.expect(0x5b); // [
    if (this.peek() === 0x5d) this.at++;
    else {
      for (;;) {
        rows.push(this.peek() === 0x7b ? this.object() : new NotAnObject(this.value(this.at, this.skipValue(1))));
        if (this.separator(0x5d)) break;
      }
    }
    this.skipSpace();
    if (this.at !== this.body.length) this.fail('text after the array');
    return rows;
  }

  /** An object's chosen members; the reader is at its `{`. */
  private object(): unknown[] {
    if (this.maxDepth < 2) throw new NestedTooDeep(this.maxDepth);
    const row = new Array<unknown>(this.names.length);
    this.at++;
    if (this.peek() === 0x7d) {
      this.at++;
      return row;
    }
    for (;;) {
      if (this.peek() !== QUOTE) this.fail('a member name');
      const start = this.at;
      const end = this.skipString();
      const k = this.escapes ? this.escapedName(start, end) : this.name(start + 1, end - 1);
      this.expect(COLON);
      this.skipSpace();
      const valueStart = this.at;
      const valueEnd = this.skipValue(2);
      if (k >= 0) row[k] = this.value(valueStart, valueEnd);
      if (this.separator(0x7d)) return row;
    }
  }

  /**
   * Which of the names the bytes from `start` to `end` are, or -1. Compared from their ends: names
   * of a length often share a prefix (`rental_price_min`, `rental_price_max`) and seldom an ending.
   */
  private name(start: number, end: number): number {
    const candidates = this.byLength[end - start];
    if (candidates === undefined) return -1;
    const { body, names } = this;
    for (const n of candidates) {
      const name = names[n];
      let i = name.length - 1;
      while (i >= 0 && body[start + i] === name[i]) i--;
      if (i < 0) return n;
    }
    return -1;
  }

  /** Which of the names the string token from `start` to `end`, holding escapes, decodes to, or -1. */
  private escapedName(start: number, end: number): number {
    const decoded = Buffer.from(this.value(start, end) as string, 'utf8');
    return this.names.findIndex((name) => name.equals(decoded));
  }

  /** After a value: a comma (true: more follow) or the closing bracket (false). */
  private separator(close: number): boolean {
    const c = this.peek();
    this.at++;
    if (c === COMMA) {
      this.skipSpace();
      return false;
    }
    if (c !== close) this.fail(`"," or "${String.fromCharCode(close)}"`, this.at - 1);
    return true;
  }

  /** Steps over the value at the reader's place, inside `outer` arrays and objects; answers where it ends. */
  private skipValue(outer: number): number {
    const { body } = this;
    const c = body[this.at];
    if (c === QUOTE) return (this.at = this.skipString());
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      for (;;) {
        const d = body[this.at];
        if (d === QUOTE) {
          this.at = this.skipString();
          continue;
        }
        if (d === 0x7b || d === 0x5b) {
          if (outer + ++depth > this.maxDepth) throw new NestedTooDeep(this.maxDepth);
        } else if (d === 0x7d || d === 0x5d) {
          if (--depth === 0) return ++this.at;
        } else if (d === undefined) this.fail('the end of a nested value');
        this.at++;
      }
    }
    // A number or a literal: it runs to the next delimiter.
    let end = this.at;
    for (;;) {
      const d = body[end];
      if (d === COMMA || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09 || d === undefined) break;
      end++;
    }
    if (end === this.at) this.fail('a value');
    return (this.at = end);
  }

  /** Steps over the string at the reader's place; answers the place after its closing quote. */
  private skipString(): number {
    const { body } = this;
    const length = body.length;
    this.escapes = false;
    for (let i = this.at + 1; i < length; i++) {
      const b = body[i];
      if (b === QUOTE) return (this.at = i + 1);
      if (b === BACKSLASH) {
        this.escapes = true;
        i++;
      }
    }
    return this.fail('the end of a string');
  }

  /** The value of the bytes from `start` to `end`, the token just stepped over, as JSON.parse reads it. */
  private value(start: number, end: number): unknown {
    const { body } = this;
    const c = body[start];
    // A string token is always the last one stepped over, so `escapes` is its own.
    if (c === QUOTE && !this.escapes) return body.toString('utf8', start + 1, end - 1);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const n = shortDecimal(body, start, end) ?? Number(body.toString('latin1', start, end));
      if (n === n) return n;
    }
    if (c === 0x6e && end - start === 4 && body[start + 1] === 0x75 && body[start + 2] === 0x6c && body[start + 3] === 0x6c) return null;
    try {
      return JSON.parse(body.toString('utf8', start, end));
    } catch {
      return this.fail('a JSON value', start);
    }
  }

  private peek(): number | undefined {
    this.skipSpace();
    return this.body[this.at];
  }

  private expect(c: number): void {
    if (this.peek() !== c) this.fail(`"${String.fromCharCode(c)}"`);
    this.at++;
  }

  private skipSpace(): void {
    const { body } = this;
    let c = body[this.at];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = body[++this.at];
  }

  private fail(expected: string, at: number = this.at): never {
    throw new SyntaxError(at >= this.body.length ? `unexpected end of JSON, expected ${expected}` : `expected ${expected} at position ${at} of the JSON`);
  }
}

/**
 * A decimal number of at most 15 digits without an exponent (`-?\d+(\.\d+)?`, as most predictions
 * are), read from its bytes; undefined for anything else. Its digits as an integer and the power of
 * ten are both exact doubles, so their quotient is rounded once, to the double nearest the decimal:
 * what Number() reads from the text, without making the text.
 */
function shortDecimal(body: Buffer, start: number, end: number): number | undefined {
  let at = start;
  const negative = body[at] === 0x2d;
  if (negative) at++;
  let digits = 0;
  let mantissa = 0;
  let fraction = -1;
  for (; at < end; at++) {
    const b = body[at];
    if (b >= 0x30 && b <= 0x39) {
      mantissa = mantissa * 10 + (b - 0x30);
      digits++;
      if (fraction >= 0) fraction++;
    } else if (b === 0x2e && fraction < 0) fraction = 0;
    else return undefined;
  }
  if (digits === 0 || digits > 15 || fraction === 0) return undefined;
  const value = fraction > 0 ? mantissa / EXACT_POWERS_OF_TEN[fraction] : mantissa;
  return negative ? -value : value;
}
