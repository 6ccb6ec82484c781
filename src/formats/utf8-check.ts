import { isUtf8 } from 'node:buffer';

/**
 * Checks that a byte stream is UTF-8, chunk by chunk, and says where it is not. Decoding with
 * replacement would turn bad bytes into U+FFFD silently; a scorer must refuse such input instead.
 *
 * Each chunk is validated where it lies (buffer.isUtf8), without decoding it: a streaming decode
 * made a string of every chunk only to drop it, about as many bytes of garbage as the file. A
 * character cut by a chunk's end is checked whole once the next chunk completes it.
 */
export class Utf8Check {
  /** The bytes of a character the last chunk began and did not end. */
  private pending: Buffer = NONE;

  /** Answers the index in `chunk` of the first invalid byte, or -1 when the stream is valid so far. */
  push(chunk: Buffer): number {
    let from = 0;
    if (this.pending.length > 0) {
      from = Math.min(chunk.length, sequenceLength(this.pending[0]) - this.pending.length);
      const joined = Buffer.concat([this.pending, chunk.subarray(0, from)]);
      if (joined.length < sequenceLength(joined[0])) {
        if (!completable(joined)) return Math.max(0, firstInvalidByte(chunk));
        this.pending = joined;
        return -1;
      }
      this.pending = NONE;
      if (!isUtf8(joined)) return Math.max(0, firstInvalidByte(chunk));
    }
    const cut = Math.max(from, incompleteTail(chunk));
    if (!isUtf8(chunk.subarray(from, cut))) return Math.max(0, firstInvalidByte(chunk));
    if (cut < chunk.length) this.pending = Buffer.from(chunk.subarray(cut));
    return -1;
  }

  /** Answers false when the stream ended inside a multi-byte character. */
  end(): boolean {
    return this.pending.length === 0;
  }
}

const NONE = Buffer.alloc(0);

/** The bytes of the sequence a lead byte begins; 1 for a byte that begins none (validation refuses it). */
function sequenceLength(lead: number): number {
  return lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xc2 && lead <= 0xdf ? 2 : 1;
}

/**
 * Where the sequence a chunk ends inside begins (its lead byte), or the chunk's length when it
 * ends on a character's end, or inside a sequence no byte could complete (which is then refused in
 * this chunk, as a streaming decoder refuses it: `E0 80` is wrong before its third byte comes).
 */
function incompleteTail(chunk: Buffer): number {
  for (let back = 1; back <= 3 && back <= chunk.length; back++) {
    const b = chunk[chunk.length - back];
    if ((b & 0xc0) === 0x80) continue;
    const start = chunk.length - back;
    return sequenceLength(b) > back && completable(chunk.subarray(start)) ? start : chunk.length;
  }
  return chunk.length;
}

/** Whether some continuation bytes complete the beginning of a sequence into a character (the second byte's range depends on the lead). */
function completable(begun: Buffer): boolean {
  const whole = Buffer.alloc(sequenceLength(begun[0]), 0x80);
  begun.copy(whole);
  if (begun.length === 1) whole[1] = begun[0] === 0xe0 ? 0xa0 : begun[0] === 0xf0 ? 0x90 : 0x80;
  return isUtf8(whole);
}

/**
 * Index of the byte at which decoding `buf` fails, found by bisection: a streaming decode of a
 * prefix fails once the prefix holds an invalid sequence, and never before. Continuation bytes at
 * the start belong to a character begun in the previous chunk and are skipped.
 */
function firstInvalidByte(buf: Buffer): number {
  let start = 0;
  while (start < 3 && start < buf.length && (buf[start] & 0xc0) === 0x80) start++;
  const fails = (end: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(buf.subarray(start, end), { stream: true });
      return false;
    } catch {
      return true;
    }
  };
  if (!fails(buf.length)) return start > 0 ? 0 : -1;
  let [lo, hi] = [start, buf.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fails(mid + 1)) hi = mid;
    else lo = mid + 1;
  }
  // The decoder fails at the byte that breaks a sequence; name the sequence's lead byte instead.
  let lead = lo - 1;
  while (lead > start && lo - lead < 4 && (buf[lead] & 0xc0) === 0x80) lead--;
  const b = buf[lead] ?? 0;
  const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return lead >= start && length > 1 && lead + length > lo ? lead : lo;
}
