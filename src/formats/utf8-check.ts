/**
 * Checks that a byte stream is UTF-8, chunk by chunk, and says where it is not. Decoding with
 * replacement would turn bad bytes into U+FFFD silently; a scorer must refuse such input instead.
 */
export class Utf8Check {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  /** Answers the index in `chunk` of the first invalid byte, or -1 when the stream is valid so far. */
  push(chunk: Buffer): number {
    try {
      this.decoder.decode(chunk, { stream: true });
      return -1;
    } catch {
      return Math.max(0, firstInvalidByte(chunk));
    }
  }

  /** Answers false when the stream ended inside a multi-byte character. */
  end(): boolean {
    try {
      this.decoder.decode();
      return true;
    } catch {
      return false;
    }
  }
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
