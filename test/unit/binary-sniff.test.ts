import { describe, expect, it } from 'vitest';
import { describeBinary } from '../../src/formats/binary-sniff.js';

const bytes = (...b: number[]) => Buffer.from(b);
const withText = (magic: Buffer, text = 'rest of the file') => Buffer.concat([magic, Buffer.from(text)]);

describe('describeBinary', () => {
  it.each([
    ['a ZIP archive', withText(bytes(0x50, 0x4b, 0x03, 0x04, 0x14, 0x00)), 'a ZIP archive (an Excel .xlsx or OpenDocument spreadsheet?)'],
    ['an OLE2 .xls', withText(bytes(0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1)), 'an old Excel .xls (OLE2) file'],
    ['a Parquet file', withText(bytes(0x50, 0x41, 0x52, 0x31, 0x15, 0x04)), 'a Parquet file'],
    ['a PDF', Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'), 'a PDF document'],
    ['gzip inside gzip', withText(bytes(0x1f, 0x8b, 0x08, 0x00)), 'gzip-compressed twice'],
  ])('names %s', (_what, head, expected) => {
    expect(describeBinary(head)).toBe(expected);
    expect(describeBinary(head, 'utf-8')).toBe(expected);
    expect(describeBinary(head, 'utf-16le')).toBe(expected);
  });

  it('answers undefined for text', () => {
    for (const text of ['id,name\n1,ann\n', '{"a":1}\n', '\uFEFFid;größe\n', '', 'PAR1,PAR2\n1,2\n', '%PDF,x\n', 'PK,zip\n']) {
      expect(describeBinary(Buffer.from(text, 'utf8'))).toBeUndefined();
    }
  });

  it('calls data with a NUL byte in the first 4 KiB binary', () => {
    expect(describeBinary(Buffer.from('id,name\n1,a\0b\n'))).toBe('binary data (it holds NUL bytes)');
    expect(describeBinary(Buffer.concat([Buffer.alloc(4095, 0x61), bytes(0)]))).toBe('binary data (it holds NUL bytes)');
    expect(describeBinary(Buffer.concat([Buffer.alloc(4096, 0x61), bytes(0)]))).toBeUndefined();
    expect(describeBinary(Buffer.from('a\0b'), 'latin1')).toBe('binary data (it holds NUL bytes)');
  });

  it('does not call UTF-16 or UTF-32 text binary when that encoding is given', () => {
    const utf16 = Buffer.from('id,name\n1,ann\n', 'utf16le');
    expect(describeBinary(utf16)).toBe('binary data (it holds NUL bytes)');
    for (const encoding of ['utf-16le', 'UTF16LE', 'utf-16be', 'utf16', 'ucs2', 'utf-32le']) expect(describeBinary(utf16, encoding)).toBeUndefined();
    const withBom = Buffer.concat([bytes(0xff, 0xfe), utf16]);
    expect(describeBinary(withBom, 'utf-16le')).toBeUndefined();
  });

  it('names the encoding to pass for UTF-16 and UTF-32 text read as UTF-8', () => {
    const le = Buffer.concat([bytes(0xff, 0xfe), Buffer.from('id\n', 'utf16le')]);
    const be = Buffer.concat([bytes(0xfe, 0xff), Buffer.from('id\n', 'utf16le').swap16()]);
    expect(describeBinary(le)).toBe('UTF-16 text: pass --encoding utf-16le');
    expect(describeBinary(le, 'UTF-8')).toBe('UTF-16 text: pass --encoding utf-16le');
    expect(describeBinary(be, 'utf8')).toBe('UTF-16 text: pass --encoding utf-16be');
    expect(describeBinary(bytes(0xff, 0xfe, 0, 0, 0x61, 0, 0, 0))).toBe('UTF-32 text: pass --encoding utf-32le');
    expect(describeBinary(bytes(0, 0, 0xfe, 0xff, 0, 0, 0, 0x61))).toBe('UTF-32 text: pass --encoding utf-32be');
  });
});
