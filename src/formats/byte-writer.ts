import { EXACT_POWERS_OF_TEN } from './powers-of-ten.js';

/**
 * Text written as UTF-8 into one growing buffer, without a string per piece: a line or a request
 * row built by concatenating strings was a tree of strings per row, which the collector had to
 * keep and then flatten and encode again. ASCII, most of any file's text, is copied a character
 * at a time; anything else is encoded by Buffer.write.
 */
export class ByteWriter {
  private out: Buffer;
  private at = 0;

  /** @param capacity bytes to start with; the buffer grows as needed */
  constructor(capacity = 1024) {
    this.out = Buffer.allocUnsafe(capacity);
  }

  /** Bytes written since the last reset. */
  get length(): number {
    return this.at;
  }

  /** Starts over, keeping the buffer. */
  reset(): void {
    this.at = 0;
  }

  /** Any text (characters `start` to `end` of it), as UTF-8. */
  text(s: string, start = 0, end = s.length): void {
    this.room(end - start);
    const { out } = this;
    let at = this.at;
    for (let i = start; i < end; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) {
        this.at = at;
        return this.utf8(s.slice(i, end));
      }
      out[at++] = c;
    }
    this.at = at;
  }

  /**
   * Text (characters `start` to `end` of it) as a JSON string, quoted and escaped: what
   * JSON.stringify writes for it. Printable ASCII without a quote or backslash is copied; anything
   * else goes through JSON.stringify.
   */
  jsonString(s: string, start = 0, end = s.length): void {
    this.room(end - start + 2);
    const { out } = this;
    let at = this.at;
    out[at++] = 0x22;
    for (let i = start; i < end; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.utf8(JSON.stringify(s.slice(start, end)));
      out[at++] = c;
    }
    out[at++] = 0x22;
    this.at = at;
  }

  /**
   * A number as String(n) writes it. Integers and decimals of up to 6 places and 15 digits (most
   * predictions) are written from their digits, without making the string: a decimal `m / 10^k`
   * that reads back as `n` has at most 15 significant digits, and no other decimal of so few
   * digits reads as the same double, so it is the shortest, which String(n) writes (in fixed
   * notation from 1e-6 on). Anything else goes through String(n).
   */
  number(n: number): void {
    const a = n < 0 ? -n : n;
    if (a >= 1e-6 && a < 1e15) {
      for (let k = 0; k <= 6; k++) {
        const p = EXACT_POWERS_OF_TEN[k];
        const m = Math.round(a * p);
        if (m / p === a && m < 1e15) return this.decimal(n < 0, m, k);
      }
    }
    this.text(String(n));
  }

  /** The integer `m` with a point `places` digits from its right (0. and zeros before it as needed), after a minus sign if `negative`. */
  private decimal(negative: boolean, m: number, places: number): void {
    let digits = 1;
    for (let rest = m; rest >= 10; rest = tenth(rest)) digits++;
    const width = Math.max(digits, places + 1) + (places > 0 ? 1 : 0) + (negative ? 1 : 0);
    this.room(width);
    const { out } = this;
    const first = this.at;
    let at = first + width - 1;
    for (let k = 0; k < places; k++) {
      const q = tenth(m);
      out[at--] = 0x30 + (m - q * 10);
      m = q;
    }
    if (places > 0) out[at--] = 0x2e;
    do {
      const q = tenth(m);
      out[at--] = 0x30 + (m - q * 10);
      m = q;
    } while (at >= first + (negative ? 1 : 0));
    if (negative) out[first] = 0x2d;
    this.at = first + width;
  }

  /**
   * A value as JSON.stringify writes it as an object member's value, undefined (which it would
   * leave out) as null: a number as `number` writes it (a number not finite is null), a string as
   * `jsonString`, anything else through JSON.stringify.
   */
  json(value: unknown): void {
    if (value === null || value === undefined) return this.text('null');
    if (typeof value === 'string') return this.jsonString(value);
    if (typeof value === 'number') return Number.isFinite(value) ? this.number(value) : this.text('null');
    this.text(JSON.stringify(value));
  }

  /** One byte (an ASCII character's code). */
  byte(b: number): void {
    this.room(1);
    this.out[this.at++] = b;
  }

  /** Bytes as they are. */
  bytes(bytes: Buffer): void {
    this.room(bytes.length);
    const { out } = this;
    let at = this.at;
    for (let i = 0; i < bytes.length; i++) out[at++] = bytes[i];
    this.at = at;
  }

  /** What another writer has written since its last reset. */
  append(other: ByteWriter): void {
    this.room(other.at);
    other.out.copy(this.out, this.at, 0, other.at);
    this.at += other.at;
  }

  /**
   * Hands over a copy of what was written, exactly as long, and starts over in its own buffer. The
   * next batch writes into memory the writer already holds; a fresh buffer as large as the last
   * (as before) was a new mapping per batch, and whatever it held past its contents was held too.
   */
  take(): Buffer {
    const written = Buffer.allocUnsafe(this.at);
    this.out.copy(written, 0, 0, this.at);
    this.at = 0;
    return written;
  }

  /** Copies bytes `start` to `end` of what was written into `target` at `at`. */
  copyTo(target: Buffer, at: number, start = 0, end = this.at): void {
    this.out.copy(target, at, start, end);
  }

  /** What was written, as text. */
  toString(): string {
    return this.out.toString('utf8', 0, this.at);
  }

  private utf8(s: string): void {
    this.room(s.length * 3);
    this.at += this.out.write(s, this.at, 'utf8');
  }

  /** Makes room for `n` more bytes. */
  private room(n: number): void {
    if (this.at + n <= this.out.length) return;
    const larger = Buffer.allocUnsafe(Math.max(2 * this.out.length, this.at + n));
    this.out.copy(larger, 0, 0, this.at);
    this.out = larger;
  }
}

/**
 * A non-negative integer divided by ten, rounded down. Below 2^31 it is an int32 division: the
 * digits of most numbers written (predictions, row ids) came about a quarter sooner than from
 * Math.floor of a double's quotient.
 */
function tenth(x: number): number {
  return x <= 0x7fffffff ? (x / 10) | 0 : Math.floor(x / 10);
}
