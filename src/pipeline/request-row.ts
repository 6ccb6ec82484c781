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
  const text = value as string;
  if (text === '') return null;
  if (CANONICAL_NUMBER.test(text)) {
    const n = Number(text);
    const underflow = n === 0 && /[1-9]/.test(text.replace(/[eE].*$/, ''));
    const unsafe = Number.isInteger(n) && !Number.isSafeInteger(n);
    if (Number.isFinite(n) && !underflow && !unsafe) return n;
  }
  return text;
}

/** The request row: the model's input columns only, plus the row id member the server echoes (when there is one). */
export function encodeRequestRow(
  record: Record<string, unknown>,
  sent: readonly string[],
  fromCsv: boolean,
  rowIdMember: string | undefined,
  rowId: number,
): EncodedRow {
  const out: Record<string, unknown> = {};
  for (const column of sent) out[column] = requestValue(record[column], fromCsv);
  if (rowIdMember !== undefined) out[rowIdMember] = rowId;
  const json = JSON.stringify(out);
  return { json, bytes: Buffer.byteLength(json) };
}

/** Whether an answer's row id member carries the id that was sent (a server may echo it re-typed, as text). */
export function echoesRowId(echoed: unknown, rowId: number): boolean {
  return echoed === rowId || echoed === String(rowId);
}
