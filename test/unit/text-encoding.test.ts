import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import iconv from 'iconv-lite';
import { checkEncoding, decodeToUtf8, isUtf8 } from '../../src/formats/text-encoding.js';

/** `bytes` as a stream of chunks of `size` bytes (object mode keeps them apart). */
function chunks(bytes: Buffer, size: number): Readable {
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
  return Readable.from(parts);
}

/** Decodes `bytes` fed in chunks of `size` bytes, and answers the UTF-8 output as a string. */
async function decode(bytes: Buffer, encoding: string, size = bytes.length || 1): Promise<string> {
  const out: Buffer[] = [];
  for await (const chunk of decodeToUtf8(chunks(bytes, size), encoding)) out.push(chunk);
  return Buffer.concat(out).toString('utf8');
}

/** Decodes whole and one byte at a time, expects both to give `expected`. */
async function expectDecodes(bytes: Buffer, encoding: string, expected: string): Promise<void> {
  expect(await decode(bytes, encoding)).toBe(expected);
  expect(await decode(bytes, encoding, 1)).toBe(expected);
  expect(await decode(bytes, encoding, 3)).toBe(expected);
}

describe('checkEncoding', () => {
  it('answers one canonical name for the spellings of an encoding', () => {
    expect(checkEncoding('UTF-8')).toBe('utf8');
    expect(checkEncoding('utf8')).toBe('utf8');
    expect(checkEncoding('Windows-1252')).toBe('windows1252');
    expect(checkEncoding('UTF-16LE')).toBe('utf16le');
    expect(checkEncoding('utf_16le')).toBe('utf16le');
    expect(checkEncoding('Shift_JIS')).toBe('shiftjis');
    expect(checkEncoding('latin1')).toBe('latin1');
    expect(checkEncoding('ISO-8859-1')).toBe('iso88591');
  });

  it('rejects an unknown encoding, naming common ones', () => {
    expect(() => checkEncoding('utf-9')).toThrow(/unknown text encoding "utf-9"; common ones are utf-8, latin1, windows-1252, utf-16le, utf-16be, shift_jis/);
    expect(() => checkEncoding('')).toThrow(/unknown text encoding/);
  });

  it('rejects binary-to-text codecs iconv-lite also knows', () => {
    for (const name of ['base64', 'hex']) expect(() => checkEncoding(name)).toThrow(/unknown text encoding/);
  });
});

describe('isUtf8', () => {
  it('is true for UTF-8 however spelled, false for others', () => {
    for (const name of ['utf8', 'UTF8', 'utf-8', 'UTF-8']) expect(isUtf8(name)).toBe(true);
    for (const name of ['latin1', 'utf-16le', 'utf-80', 'cesu8']) expect(isUtf8(name)).toBe(false);
  });
});

describe('decodeToUtf8', () => {
  it('decodes latin1', async () => {
    await expectDecodes(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2c, 0xe4, 0xf6, 0xfc, 0xdf, 0x0a]), 'latin1', 'café,äöüß\n');
  });

  it('decodes windows-1252, where 0x80 is the euro sign', async () => {
    await expectDecodes(Buffer.from([0x80, 0x20, 0x39, 0x2c, 0x93, 0x71, 0x94, 0x0a]), 'windows-1252', '€ 9,“q”\n');
  });

  it('decodes UTF-16LE with a byte order mark, and drops the mark', async () => {
    const text = 'id,name\n1,é€😀中\n';
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    await expectDecodes(bytes, 'utf-16le', text);
    expect((await decode(bytes, 'utf-16le', 1)).charCodeAt(0)).not.toBe(0xfeff);
  });

  it('decodes UTF-16LE without a mark, and UTF-16BE with one', async () => {
    const text = 'a,😀\n';
    await expectDecodes(Buffer.from(text, 'utf16le'), 'utf16le', text);
    await expectDecodes(iconv.encode(text, 'utf-16be', { addBOM: true }), 'utf-16be', text);
    await expectDecodes(iconv.encode(text, 'utf-16be'), 'utf-16be', text);
  });

  it('decodes Shift_JIS, double-byte characters split across chunks', async () => {
    const text = 'id,名前\n1,東京ｶﾀｶﾅ\n';
    await expectDecodes(iconv.encode(text, 'shift_jis'), 'shift_jis', text);
  });

  it('passes UTF-8 through unchanged, for the strict UTF-8 check after it', async () => {
    const bytes = Buffer.from([0x61, 0xff, 0x0a]);
    const out: Buffer[] = [];
    for await (const chunk of decodeToUtf8(chunks(bytes, 1), 'UTF-8')) out.push(chunk);
    expect(Buffer.concat(out)).toEqual(bytes);
  });

  it('answers nothing for an empty input', async () => {
    expect(await decode(Buffer.alloc(0), 'utf-16le')).toBe('');
    expect(await decode(Buffer.from([0xff, 0xfe]), 'utf-16le', 1)).toBe('');
  });

  it('rejects an unknown encoding', async () => {
    await expect(decode(Buffer.from('a'), 'nope')).rejects.toThrow(/unknown text encoding/);
  });
});
