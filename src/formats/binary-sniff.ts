import { isUtf8, isWideEncoding } from './text-encoding.js';

/**
 * Recognises files that are not text from their first bytes, so that a spreadsheet or a Parquet
 * file given by mistake is refused with a name for what it is, instead of as a CSV whose header
 * is garbage or whose every row fails.
 */

/** Bytes a binary format starts with, and what to call the file. */
const MAGIC: readonly { bytes: readonly number[]; what: string; then?: (next: number) => boolean }[] = [
  { bytes: [0x50, 0x4b, 0x03, 0x04], what: 'a ZIP archive (an Excel .xlsx or OpenDocument spreadsheet?)' },
  { bytes: [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], what: 'an old Excel .xls (OLE2) file' },
  // `PAR1` could start a CSV header too; in Parquet a Thrift page header, a control byte, follows it.
  { bytes: [0x50, 0x41, 0x52, 0x31], what: 'a Parquet file', then: (b) => b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d },
  { bytes: [0x25, 0x50, 0x44, 0x46, 0x2d], what: 'a PDF document' },
  // Read after gunzip: the decompressed bytes are gzip again.
  { bytes: [0x1f, 0x8b], what: 'gzip-compressed twice' },
];

/** How far to look for NUL bytes: text never holds one, and binary data has them early. */
const NUL_WINDOW = 4096;

/**
 * What a (decompressed) file is when its first bytes say it is not text, or undefined for text.
 * The answer is a fragment for `${file}: is ${what}; export it as CSV or JSON Lines`.
 *
 * @param head the first bytes of the file (4 KiB or more for the NUL check)
 * @param encoding the encoding given for the file, if any: UTF-16 and UTF-32 text is full of NULs,
 *   so with those a NUL byte says nothing; with UTF-8 (or none), a UTF-16 byte order mark names the
 *   encoding to give instead
 */
export function describeBinary(head: Buffer, encoding?: string): string | undefined {
  for (const { bytes, what, then } of MAGIC) {
    if (startsWith(head, bytes) && (!then || (head.length > bytes.length && then(head[bytes.length])))) return what;
  }
  const wide = encoding !== undefined && isWideEncoding(encoding);
  if (!wide && (encoding === undefined || isUtf8(encoding))) {
    // UTF-32LE's mark starts with UTF-16LE's: test it first.
    if (startsWith(head, [0xff, 0xfe, 0, 0])) return 'UTF-32 text: pass --encoding utf-32le';
    if (startsWith(head, [0, 0, 0xfe, 0xff])) return 'UTF-32 text: pass --encoding utf-32be';
    if (head[0] === 0xff && head[1] === 0xfe) return 'UTF-16 text: pass --encoding utf-16le';
    if (head[0] === 0xfe && head[1] === 0xff) return 'UTF-16 text: pass --encoding utf-16be';
  }
  if (!wide && head.subarray(0, NUL_WINDOW).includes(0)) return 'binary data (it holds NUL bytes)';
  return undefined;
}

function startsWith(head: Buffer, bytes: readonly number[]): boolean {
  return head.length >= bytes.length && bytes.every((b, i) => head[i] === b);
}
