/**
 * Bounds on text derived from input (a row, a header, a column name, a server's detail) wherever
 * it is shown or kept: error messages, failure reasons in Redis, API answers, pages, manifests and
 * logs. A 50 MB header line must cost them no more than any other failure, and the part shown is
 * marked as an excerpt, so nobody mistakes it for the whole.
 */

/** About 1 KiB of UTF-8: the most a message quotes of one value (a row, a header, a column name, a field). */
export const VALUE_BYTES = 1024;

/** 4 KiB of UTF-8: the most of one message, whatever it quotes. */
export const MESSAGE_BYTES = 4096;

/** What ends a text that was cut: how much of it is left out, in bytes of UTF-8. */
function marker(bytesLeftOut: number): string {
  return `... ${bytesLeftOut} more bytes`;
}

/**
 * `text` itself when its UTF-8 takes at most `maxBytes`, else its longest beginning that fits in
 * `maxBytes` together with "... N more bytes", N being the bytes of UTF-8 left out. A character
 * is never cut in half (a surrogate pair stays whole). `maxBytes` should leave room for the
 * marker (at least 32); the result is never longer than the marker alone otherwise.
 */
export function excerpt(text: string, maxBytes: number = VALUE_BYTES): string {
  // No UTF-16 unit takes more than 3 bytes of UTF-8: most texts are known to fit without counting.
  if (text.length * 3 <= maxBytes) return text;
  const total = Buffer.byteLength(text, 'utf8');
  if (total <= maxBytes) return text;
  return cut(text, total, maxBytes);
}

/**
 * `excerpt` of a text of which only `beginning` was kept (a row too long to hold): its UTF-8 took
 * `totalBytes` in all, which the marker counts from. A character cut at the beginning's end is dropped.
 */
export function excerptOfBeginning(beginning: string, totalBytes: number, maxBytes: number = VALUE_BYTES): string {
  const whole = beginning.endsWith('\uFFFD') ? beginning.slice(0, -1) : beginning;
  return totalBytes <= maxBytes ? whole : cut(whole, totalBytes, maxBytes);
}

/** The longest beginning of `text` that fits in `maxBytes` with the marker of a text of `total` bytes, and the marker. */
function cut(text: string, total: number, maxBytes: number): string {
  // N is at most `total`, so a marker written with `total` is at least as long as the real one.
  const room = maxBytes - Buffer.byteLength(marker(total));
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const c = text.charCodeAt(end);
    const next = text.charCodeAt(end + 1);
    const pair = c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
    // A lone surrogate is written as U+FFFD, 3 bytes, as Buffer.byteLength counts it.
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > room) break;
    bytes += size;
    end += pair ? 2 : 1;
  }
  return `${text.slice(0, end)}${marker(total - bytes)}`;
}

/** Where the frames of a V8 stack trace start, after the error's name and message. */
const FRAMES = /\n {4}at /;

/**
 * A stack trace whose message part (everything before the first frame, which repeats the error's
 * message) and frames part are each bounded to MESSAGE_BYTES, so the frames survive a message
 * that quotes a 50 MB line.
 */
export function excerptStack(stack: string): string {
  if (stack.length * 3 <= 2 * MESSAGE_BYTES) return stack;
  const frames = stack.search(FRAMES);
  if (frames < 0) return excerpt(stack, MESSAGE_BYTES);
  return `${excerpt(stack.slice(0, frames), MESSAGE_BYTES)}${excerpt(stack.slice(frames), MESSAGE_BYTES)}`;
}
