import { ByteWriter } from '../formats/byte-writer.js';

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
  const first = text.charCodeAt(0);
  if ((first === 0x2d || (first >= 0x30 && first <= 0x39)) && CANONICAL_NUMBER.test(text)) {
    const n = Number(text);
    const underflow = n === 0 && /[1-9]/.test(text.replace(/[eE].*$/, ''));
    const unsafe = Number.isInteger(n) && !Number.isSafeInteger(n);
    if (Number.isFinite(n) && !underflow && !unsafe) return n;
  }
  return text;
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

  /**
   * @param sent the input columns the model reads, in the order they are sent
   * @param fromCsv values are CSV text, read by `requestValue`; JSON Lines values are sent as they are
   * @param rowIdMember the member carrying the row id, or undefined when the server echoes none
   */
  constructor(
    sent: readonly string[],
    private readonly fromCsv: boolean,
    rowIdMember: string | undefined,
  ) {
    this.columns = sent.filter((c) => c !== rowIdMember);
    this.keys = this.columns.map((c, i) => Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(c)}:`));
    this.idKey = rowIdMember === undefined ? undefined : Buffer.from(`${this.columns.length === 0 ? '{' : ','}${JSON.stringify(rowIdMember)}:`);
  }

  /** Encodes a row; answers its length in bytes. The row is kept until the next call (`appendTo`, `text`). */
  encode(record: Readonly<Record<string, unknown>>, rowId: number): number {
    const { columns, keys, out } = this;
    out.reset();
    for (let i = 0; i < columns.length; i++) {
      out.bytes(keys[i]);
      this.value(record[columns[i]]);
    }
    if (this.idKey !== undefined) {
      out.bytes(this.idKey);
      out.text(String(rowId));
    }
    if (out.length === 0) out.byte(0x7b);
    out.byte(0x7d);
    return out.length;
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

  private value(value: unknown): void {
    const { out } = this;
    if (typeof value === 'string' && this.fromCsv) {
      if (value === '') return out.text('null');
      // An integer of at most 15 digits is sent as written, which is how String(Number(text)) writes it.
      if (isShortInteger(value)) return out.text(value);
      const v = requestValue(value, true);
      if (typeof v === 'number') return out.text(String(v));
      return out.jsonString(value);
    }
    if (value === null || value === undefined) return out.text('null');
    if (typeof value === 'string') return out.jsonString(value);
    if (typeof value === 'number') return out.text(Number.isFinite(value) ? String(value) : 'null');
    out.text(JSON.stringify(value));
  }
}

/** `-?(0|[1-9]\d*)` of at most 15 digits, "-0" aside: a number JSON and String(Number(text)) write the same. */
function isShortInteger(s: string): boolean {
  const sign = s.charCodeAt(0) === 0x2d ? 1 : 0;
  const digits = s.length - sign;
  if (digits === 0 || digits > 15) return false;
  const first = s.charCodeAt(sign);
  if (first === 0x30) return digits === 1 && sign === 0;
  for (let i = sign; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** Whether an answer's row id member carries the id that was sent (a server may echo it re-typed, as text). */
export function echoesRowId(echoed: unknown, rowId: number): boolean {
  return echoed === rowId || echoed === String(rowId);
}
