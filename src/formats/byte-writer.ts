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

  /** Any text, as UTF-8. */
  text(s: string): void {
    this.room(s.length);
    const { out } = this;
    let at = this.at;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) {
        this.at = at;
        return this.utf8(s.slice(i));
      }
      out[at++] = c;
    }
    this.at = at;
  }

  /**
   * Text as a JSON string, quoted and escaped: what JSON.stringify writes for it. Printable ASCII
   * without a quote or backslash is copied; anything else goes through JSON.stringify.
   */
  jsonString(s: string): void {
    this.room(s.length + 2);
    const { out } = this;
    let at = this.at;
    out[at++] = 0x22;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.utf8(JSON.stringify(s));
      out[at++] = c;
    }
    out[at++] = 0x22;
    this.at = at;
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
   * Hands over what was written, as a view of the buffer, and starts over in a new buffer as large:
   * the next batch of the same kind seldom has to grow it.
   */
  take(): Buffer {
    const written = this.out.subarray(0, this.at);
    this.out = Buffer.allocUnsafe(this.out.length);
    this.at = 0;
    return written;
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
