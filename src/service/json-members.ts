import { isAscii } from 'node:buffer';

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
 * everything else a row needs, and the objects' garbage most of the collector's work. So the body
 * is read as latin1 (one byte, one character: JSON's syntax is ASCII), members not asked for are
 * stepped over, and only the values asked for are decoded, as JSON.parse would (strings holding
 * UTF-8 bytes or escapes are decoded as such).
 *
 * The document's structure is checked throughout (brackets, commas, colons, strings closed), so a
 * cut or garbled body is refused with a SyntaxError; a value not asked for is checked only for
 * where it ends. A repeated member takes its last value, as in JSON.parse.
 */
export function pickMembers(body: Buffer, members: readonly string[]): PickedRow[] {
  const ascii = isAscii(body);
  // Names compared with the latin1 reading of the body's UTF-8 bytes.
  const names = ascii ? members : members.map((m) => Buffer.from(m, 'utf8').toString('latin1'));
  return new Reader(body.toString('latin1'), names, ascii).array();
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;

class Reader {
  private at = 0;
  /** The first backslash at or after `at`'s string (-1: none left), found once for many strings. */
  private backslash = -2;
  /** The names by their length, so that most members are told apart by their name's length alone. */
  private readonly byLength: number[][] = [];

  constructor(
    private readonly text: string,
    private readonly names: readonly string[],
    private readonly ascii: boolean,
  ) {
    names.forEach((name, n) => (this.byLength[name.length] ??= []).push(n));
  }

  array(): PickedRow[] {
    const rows: PickedRow[] = [];
    this.expect(0x5b); // [
    if (this.peek() === 0x5d) this.at++;
    else {
      for (;;) {
        rows.push(this.peek() === 0x7b ? this.object() : new NotAnObject(this.value(this.at, this.skipValue())));
        if (this.separator(0x5d)) break;
      }
    }
    this.skipSpace();
    if (this.at !== this.text.length) this.fail('text after the array');
    return rows;
  }

  /** An object's chosen members; the reader is at its `{`. */
  private object(): unknown[] {
    const { text, names } = this;
    const row = new Array<unknown>(names.length);
    this.at++;
    if (this.peek() === 0x7d) {
      this.at++;
      return row;
    }
    for (;;) {
      if (this.peek() !== QUOTE) this.fail('a member name');
      const start = this.at;
      const end = this.skipString();
      const length = end - start - 2;
      let k = -1;
      if (!this.escaped(start, end)) {
        const candidates = this.byLength[length];
        if (candidates !== undefined) {
          for (const n of candidates) {
            if (text.startsWith(names[n], start + 1)) {
              k = n;
              break;
            }
          }
        }
      } else k = names.indexOf(this.latin1(this.value(start, end) as string));
      this.expect(COLON);
      this.skipSpace();
      const valueStart = this.at;
      const valueEnd = this.skipValue();
      if (k >= 0) row[k] = this.value(valueStart, valueEnd);
      if (this.separator(0x7d)) return row;
    }
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

  /** Steps over the value at the reader's place; answers where it ends. */
  private skipValue(): number {
    const { text } = this;
    const c = text.charCodeAt(this.at);
    if (c === QUOTE) return (this.at = this.skipString());
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      for (;;) {
        const d = text.charCodeAt(this.at);
        if (d === QUOTE) {
          this.at = this.skipString();
          continue;
        }
        if (d === 0x7b || d === 0x5b) depth++;
        else if (d === 0x7d || d === 0x5d) {
          if (--depth === 0) return ++this.at;
        } else if (d !== d) this.fail('the end of a nested value');
        this.at++;
      }
    }
    // A number or a literal: it runs to the next delimiter.
    let end = this.at;
    for (;;) {
      const d = text.charCodeAt(end);
      if (d === COMMA || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09 || d !== d) break;
      end++;
    }
    if (end === this.at) this.fail('a value');
    return (this.at = end);
  }

  /** Steps over the string at the reader's place; answers the place after its closing quote. */
  private skipString(): number {
    const { text } = this;
    let quote = text.indexOf('"', this.at + 1);
    while (quote !== -1) {
      let escapes = 0;
      while (text.charCodeAt(quote - 1 - escapes) === BACKSLASH) escapes++;
      if (escapes % 2 === 0) return (this.at = quote + 1);
      quote = text.indexOf('"', quote + 1);
    }
    return this.fail('the end of a string');
  }

  /** The value of the text from `start` to `end`, as JSON.parse reads it. */
  private value(start: number, end: number): unknown {
    const { text } = this;
    const c = text.charCodeAt(start);
    if (c === QUOTE && !this.escaped(start, end)) return this.utf8(text.slice(start + 1, end - 1));
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const n = Number(text.slice(start, end));
      if (n === n) return n;
    }
    if (c === 0x6e && end - start === 4 && text.startsWith('null', start)) return null;
    try {
      return JSON.parse(this.utf8(text.slice(start, end)));
    } catch {
      return this.fail('a JSON value', start);
    }
  }

  /**
   * Whether the string token from `start` to `end` holds an escape. Strings are asked about in
   * the order they come, so the next backslash is searched for only once it is passed.
   */
  private escaped(start: number, end: number): boolean {
    if (this.backslash !== -1 && this.backslash < start) this.backslash = this.text.indexOf('\\', start);
    return this.backslash !== -1 && this.backslash < end;
  }

  /** A slice of the latin1 reading as the UTF-8 text it was. */
  private utf8(slice: string): string {
    if (this.ascii) return slice;
    for (let i = 0; i < slice.length; i++) if (slice.charCodeAt(i) > 0x7f) return Buffer.from(slice, 'latin1').toString('utf8');
    return slice;
  }

  /** A decoded name as compared with `names` (the latin1 reading of its UTF-8 bytes). */
  private latin1(name: string): string {
    return this.ascii ? name : Buffer.from(name, 'utf8').toString('latin1');
  }

  private peek(): number {
    this.skipSpace();
    return this.text.charCodeAt(this.at);
  }

  private expect(c: number): void {
    if (this.peek() !== c) this.fail(`"${String.fromCharCode(c)}"`);
    this.at++;
  }

  private skipSpace(): void {
    const { text } = this;
    let c = text.charCodeAt(this.at);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++this.at);
  }

  private fail(expected: string, at: number = this.at): never {
    throw new SyntaxError(at >= this.text.length ? `unexpected end of JSON, expected ${expected}` : `expected ${expected} at position ${at} of the JSON`);
  }
}
