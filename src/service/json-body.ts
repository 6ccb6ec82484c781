import { isAscii } from 'node:buffer';

/**
 * Parses a JSON body from its bytes. A predict answer is most of a run's bytes, and decoding it as
 * UTF-8 into a string cost as much CPU as parsing it: a body with any non-ASCII byte becomes a
 * two-byte string, which JSON.parse then reads more slowly and whose values take twice the memory.
 * So a body is read as latin1 (one byte, one character: JSON's syntax is ASCII, so the parse is the
 * same) and the few strings holding non-ASCII bytes are decoded as UTF-8 afterwards. That is exact
 * only when no `\u` escape made a non-ASCII character of its own, so a body with any `\u` in it is
 * decoded as UTF-8 first, as before.
 */
export function parseJsonBody(body: Buffer): unknown {
  if (isAscii(body)) return JSON.parse(body.toString('latin1'));
  if (body.indexOf('\\u') >= 0) return JSON.parse(body.toString('utf8'));
  return utf8Strings(JSON.parse(body.toString('latin1')));
}

/** Whether a latin1 reading of a string took in bytes above ASCII (then it is UTF-8 to decode). */
function readAsLatin1(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return true;
  return false;
}

/** The value with every string read as latin1 decoded again as the UTF-8 it was (in place for arrays and objects). */
function utf8Strings(value: unknown): unknown {
  if (typeof value === 'string') return readAsLatin1(value) ? Buffer.from(value, 'latin1').toString('utf8') : value;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = utf8Strings(value[i]);
    return value;
  }
  const record = value as Record<string, unknown>;
  let renamed: string[] | undefined;
  for (const key in record) {
    const v = record[key];
    if (typeof v === 'string' ? readAsLatin1(v) : typeof v === 'object' && v !== null) record[key] = utf8Strings(v);
    if (readAsLatin1(key)) (renamed ??= []).push(key);
  }
  // A key with non-ASCII bytes is re-keyed under its UTF-8 name (so it moves to the end of the object).
  for (const key of renamed ?? []) {
    Object.defineProperty(record, Buffer.from(key, 'latin1').toString('utf8'), { value: record[key], enumerable: true, writable: true, configurable: true });
    delete record[key];
  }
  return record;
}
