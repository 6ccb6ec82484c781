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

/** Index of the first byte that cannot start or continue a UTF-8 character (a chunk may begin mid-character). */
function firstInvalidByte(buf: Buffer): number {
  let i = 0;
  while (i < buf.length && (buf[i]! & 0xc0) === 0x80) i++; // continuation bytes of a character begun in the last chunk
  while (i < buf.length) {
    const b = buf[i]!;
    const len = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    if (len === 0) return i;
    for (let k = 1; k < len; k++) {
      if (i + k >= buf.length) return -1;
      if ((buf[i + k]! & 0xc0) !== 0x80) return i;
    }
    i += len;
  }
  return -1;
}
