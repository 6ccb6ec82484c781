/** A row ready to send: its JSON text and size, encoded once for both batching and the body. */
export interface EncodedRow {
  json: string;
  bytes: number;
}

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

/** Encodes rows for one run's requests: the keys are escaped once, not per row. */
export type RequestEncoder = (record: Record<string, unknown>, rowId: number) => EncodedRow;

/**
 * The request row: the model's input columns only, plus the row id member the server echoes (when
 * there is one), which wins over an input column of the same name. The JSON text is built directly,
 * not through an object per row: on the hot path that object was most of the encoding's cost.
 */
export function requestEncoder(sent: readonly string[], fromCsv: boolean, rowIdMember: string | undefined): RequestEncoder {
  const columns = sent.filter((c) => c !== rowIdMember);
  const keys = columns.map((c, i) => `${i === 0 ? '{' : ','}${JSON.stringify(c)}:`);
  const idKey = rowIdMember === undefined ? undefined : `${columns.length === 0 ? '{' : ','}${JSON.stringify(rowIdMember)}:`;
  return (record, rowId) => {
    let json = '';
    for (let i = 0; i < columns.length; i++) json += keys[i] + jsonText(requestValue(record[columns[i]], fromCsv));
    if (idKey !== undefined) json += idKey + String(rowId);
    json = json === '' ? '{}' : `${json}}`;
    return { json, bytes: Buffer.byteLength(json) };
  };
}

/** A value as JSON; what JSON.stringify would write for it as an object member (null for undefined). */
function jsonText(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  return JSON.stringify(value);
}

/** Whether an answer's row id member carries the id that was sent (a server may echo it re-typed, as text). */
export function echoesRowId(echoed: unknown, rowId: number): boolean {
  return echoed === rowId || echoed === String(rowId);
}
