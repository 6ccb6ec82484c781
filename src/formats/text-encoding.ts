import { StringDecoder } from 'node:string_decoder';
import { Transform } from 'node:stream';
import iconv from 'iconv-lite';
import { BatchScorerError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';

/**
 * Input in encodings other than UTF-8, decoded to UTF-8 as a stream, so that the row splitter,
 * which works on UTF-8 bytes, and everything after it need not know the input's encoding; and
 * outputs encoded from UTF-8 when another encoding is asked.
 */

/** Common encodings, named when an unknown one is given. */
const COMMON = ['utf-8', 'latin1', 'windows-1252', 'utf-16le', 'utf-16be', 'shift_jis', 'gb18030', 'big5', 'euc-kr', 'koi8-r'];

/** iconv-lite also "decodes" these, but they are not text encodings: a CSV read as base64 is a mistake. */
const NOT_TEXT = new Set(['base64', 'base64url', 'hex']);

/**
 * The canonical name of a supported encoding: lower case without punctuation, the key iconv-lite
 * uses (`UTF-16LE` → `utf16le`, `Windows-1252` → `windows1252`), so that spellings of one name compare
 * equal. Throws an Error naming a few common encodings when iconv-lite does not know the name.
 */
export function checkEncoding(name: string): string {
  const canonical = canonicalName(name);
  if (!iconv.encodingExists(canonical) || NOT_TEXT.has(canonical)) {
    throw new Error(`unknown text encoding ${excerpt(JSON.stringify(name))}; common ones are ${COMMON.join(', ')}`);
  }
  return canonical;
}

/** True for UTF-8 however it is spelled (`utf8`, `UTF-8`). */
export function isUtf8(name: string): boolean {
  return canonicalName(name) === 'utf8';
}

/** True for UTF-16 and UTF-32 (and UCS-2/4): encodings whose text is full of NUL bytes. */
export function isWideEncoding(name: string): boolean {
  return /^(utf16|utf32|ucs2|ucs4)/.test(canonicalName(name));
}

/**
 * Decodes a byte stream in `encoding` to UTF-8 chunks. iconv-lite's decoder keeps the state
 * between chunks, so a character split across chunks comes out whole; a byte order mark is dropped
 * (UTF-16 and UTF-32 files often start with one). UTF-8 passes through as it is: the caller checks
 * it strictly, which a decoder that replaces bad bytes with U+FFFD would defeat.
 */
export async function* decodeToUtf8(source: AsyncIterable<Buffer>, encoding: string): AsyncGenerator<Buffer> {
  const canonical = checkEncoding(encoding);
  if (canonical === 'utf8') {
    yield* source;
    return;
  }
  const decoder = iconv.getDecoder(canonical, { stripBOM: true });
  // A UTF-16 decoder answers a chunk's code units as they come, so a chunk can end between the two
  // halves of a surrogate pair; a lone half would become U+FFFD in UTF-8. Keep it for the next chunk.
  let pending = '';
  let first = true;
  for await (const chunk of source) {
    let text = pending + decoder.write(chunk);
    pending = '';
    const last = text.charCodeAt(text.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      pending = text.slice(-1);
      text = text.slice(0, -1);
    }
    // Only BOM-aware codecs strip the mark themselves; drop one that another decoder passed on.
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    if (text.length > 0) yield Buffer.from(text, 'utf8');
  }
  let text = pending + (decoder.end() ?? '');
  if (first && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length > 0) yield Buffer.from(text, 'utf8');
}

/** How iconv-lite keys encodings: lower case, letters and digits only. */
function canonicalName(name: string): string {
  return name.toLowerCase().replace(/[^0-9a-z]/g, '');
}

/**
 * A stream that encodes UTF-8 bytes into `encoding`, for outputs asked in another encoding. A
 * character the encoding cannot hold would be written as `?` by iconv-lite, silently changing the
 * data: it is an error instead, naming the character and where it is.
 */
export function encodeFromUtf8(encoding: string, fileName: string): Transform {
  const canonical = checkEncoding(encoding);
  const utf8 = new StringDecoder('utf8');
  const encoder = iconv.getEncoder(canonical);
  let written = 0;
  const encode = (text: string): Buffer => {
    const bytes = encoder.write(text);
    // Each text piece is checked on its own: decoded again, it must be the text it was made of.
    if (iconv.decode(bytes, canonical, { stripBOM: false }) !== text) {
      const i = [...text].findIndex((c) => iconv.decode(iconv.encode(c, canonical), canonical) !== c);
      const c = [...text][Math.max(i, 0)];
      const at = written + [...text].slice(0, Math.max(i, 0)).join('').length;
      throw new BatchScorerError(
        'E_OUTPUT',
        `${fileName}: ${JSON.stringify(c)} (U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}, character ${at + 1}) cannot be written in ${encoding}; choose an encoding that holds it, such as utf-8`,
      );
    }
    written += text.length;
    return bytes;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        done(null, encode(utf8.write(chunk)));
      } catch (err) {
        done(err as Error);
      }
    },
    flush(done) {
      try {
        const tail = encode(utf8.end());
        const end = encoder.end();
        done(null, end ? Buffer.concat([tail, end]) : tail);
      } catch (err) {
        done(err as Error);
      }
    },
  });
}
