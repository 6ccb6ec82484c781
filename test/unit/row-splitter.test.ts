import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import Papa from 'papaparse';
import { RowSplitter, type RawRow, type RowSyntax } from '../../src/formats/row-splitter.js';

interface SplitRow {
  text: string;
  offset: number;
  line: number;
}

interface SplitResult {
  rows: SplitRow[];
  unterminatedQuoteLine?: number;
}

/** Feeds `input` to a splitter in chunks of the given sizes (the rest in one last chunk). */
function split(input: string | Buffer, syntax: RowSyntax = 'csv', chunkSizes: readonly number[] = [], startOffset?: number, startLine?: number): SplitResult {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const splitter = new RowSplitter(syntax, startOffset, startLine);
  const raw: RawRow[] = [];
  const onRow = (row: RawRow) => raw.push(row);
  let at = 0;
  for (const size of chunkSizes) {
    if (at >= bytes.length) break;
    splitter.push(bytes.subarray(at, at + size), onRow);
    at += size;
  }
  if (at < bytes.length) splitter.push(bytes.subarray(at), onRow);
  const ended = splitter.end(onRow);
  return {
    rows: raw.map((r) => ({ text: r.bytes.toString('utf8'), offset: r.offset, line: r.line })),
    ...(ended.unterminatedQuoteLine !== undefined ? { unterminatedQuoteLine: ended.unterminatedQuoteLine } : {}),
  };
}

function texts(input: string, syntax: RowSyntax = 'csv'): string[] {
  return split(input, syntax).rows.map((r) => r.text);
}

describe('RowSplitter (csv)', () => {
  it('splits rows at line feeds and emits a last row without a line ending', () => {
    expect(texts('a,b\n1,2\n3,4')).toEqual(['a,b', '1,2', '3,4']);
    expect(texts('a,b\n1,2\n')).toEqual(['a,b', '1,2']);
  });

  it('drops the CR of CRLF line endings, also on the last row', () => {
    expect(texts('a,b\r\n1,2\r\n3,4\r\n')).toEqual(['a,b', '1,2', '3,4']);
    expect(texts('a,b\r\n1,2\r')).toEqual(['a,b', '1,2']);
  });

  it('keeps a CR that is not before the line feed', () => {
    expect(texts('a\rb,c\n')).toEqual(['a\rb,c']);
  });

  it('keeps quoted line feeds, CRLFs, commas and escaped quotes in one row', () => {
    const input = 'id,note\n1,"line one\nline two"\n2,"a, b"\n3,"say ""hi"""\n4,"x\r\ny"\r\n5,z\n';
    expect(texts(input)).toEqual(['id,note', '1,"line one\nline two"', '2,"a, b"', '3,"say ""hi"""', '4,"x\r\ny"', '5,z']);
  });

  it('keeps a quoted field that holds only line feeds and escaped quotes', () => {
    expect(texts('"\n""\n"\nnext\n')).toEqual(['"\n""\n"', 'next']);
  });

  it('opens a quoted field only at the start of a field, so an inch mark is text', () => {
    expect(texts(`name,height\nann,5'11"\nbob,6'0"\n`)).toEqual(['name,height', `ann,5'11"`, `bob,6'0"`]);
    // a quote in the middle of an unquoted field does not open a quoted field either
    expect(texts('a"b\nc,d"e\nf\n')).toEqual(['a"b', 'c,d"e', 'f']);
  });

  it('opens a quoted field after a comma', () => {
    expect(texts('x,"a\nb"\ny\n')).toEqual(['x,"a\nb"', 'y']);
  });

  it('skips empty lines, including lone CRs, between and after rows', () => {
    expect(texts('\n\na,b\n\n1,2\r\n\r\n\n3,4\n\n')).toEqual(['a,b', '1,2', '3,4']);
    expect(texts('')).toEqual([]);
    expect(texts('\n\r\n\n')).toEqual([]);
  });

  it('keeps an empty quoted field as a row', () => {
    expect(texts('""\n')).toEqual(['""']);
  });

  it('reports the byte offset and physical line each row starts on', () => {
    const input = 'h1,h2\n\n1,"a\nb\nc"\n2,x\r\n\r\n3,"é\n"\n4,y';
    const { rows } = split(input);
    const bytes = Buffer.from(input, 'utf8');
    expect(rows.map((r) => r.text)).toEqual(['h1,h2', '1,"a\nb\nc"', '2,x', '3,"é\n"', '4,y']);
    expect(rows.map((r) => r.line)).toEqual([1, 3, 6, 8, 10]);
    for (const row of rows) {
      // the offset is the byte at which the row's text begins in the input
      const at = bytes.subarray(row.offset, row.offset + Buffer.byteLength(row.text));
      expect(at.toString('utf8')).toBe(row.text);
    }
    expect(rows.map((r) => r.offset)).toEqual([0, 7, 17, 24, 32]);
  });

  it('counts byte offsets, not characters, after multi-byte text', () => {
    const { rows } = split('ü,€\n😀,x\nlast\n');
    expect(rows.map((r) => r.offset)).toEqual([0, 7, 14]);
    expect(rows.map((r) => r.line)).toEqual([1, 2, 3]);
  });

  it('starts counting at startOffset and startLine (a ranged read)', () => {
    const { rows } = split('1,"a\nb"\n\n2,c\n', 'csv', [], 1000, 41);
    expect(rows).toEqual([
      { text: '1,"a\nb"', offset: 1000, line: 41 },
      { text: '2,c', offset: 1009, line: 44 },
    ]);
  });

  it('reports an unterminated quote with the line the quoted field opened on, and no row for it', () => {
    const result = split('a,b\n1,2\n3,"open\nstill open\nand more');
    expect(result.rows.map((r) => r.text)).toEqual(['a,b', '1,2']);
    expect(result.unterminatedQuoteLine).toBe(3);
  });

  it('reports the quote line relative to startLine', () => {
    expect(split('x\n"y\n', 'csv', [], 0, 10).unterminatedQuoteLine).toBe(11);
  });

  it('does not report a quote that is closed at the very end', () => {
    const result = split('a,"b\nc"');
    expect(result.unterminatedQuoteLine).toBeUndefined();
    expect(result.rows.map((r) => r.text)).toEqual(['a,"b\nc"']);
  });

  it('counts lines inside quoted fields for currentLine', () => {
    const splitter = new RowSplitter('csv');
    splitter.push(Buffer.from('a\n"b\nc\n'), () => {});
    expect(splitter.currentLine).toBe(4);
  });

  it('gives the same rows when fed one byte at a time, CRLF and quotes split across chunks', () => {
    const input = 'h,"q"\r\n1,"a\r\nb"""\r\n2,é😀\r\n\r\n3,x';
    const whole = split(input);
    const bytes = Buffer.from(input, 'utf8');
    const byByte = split(
      bytes,
      'csv',
      Array.from({ length: bytes.length }, () => 1),
    );
    expect(byByte).toEqual(whole);
    expect(whole.rows.map((r) => r.text)).toEqual(['h,"q"', '1,"a\r\nb"""', '2,é😀', '3,x']);
  });
});

describe('RowSplitter (jsonl)', () => {
  it('splits on every line feed, quotes or not, and drops CRs and empty lines', () => {
    const input = '{"a":"x\n\n{"b":"\\"q"}\r\n\r\n{"c":1}';
    const { rows } = split(input, 'jsonl');
    expect(rows).toEqual([
      { text: '{"a":"x', offset: 0, line: 1 },
      { text: '{"b":"\\"q"}', offset: 9, line: 3 },
      { text: '{"c":1}', offset: 24, line: 5 },
    ]);
  });

  it('never reports an unterminated quote', () => {
    expect(split('{"a":"\n', 'jsonl').unterminatedQuoteLine).toBeUndefined();
  });

  it('ignores quotes: an opening quote does not carry a row over a line feed', () => {
    expect(texts('"abc\n"def\n', 'jsonl')).toEqual(['"abc', '"def']);
  });
});

// ---- property: chunking never changes the rows, and the rows parse back to the fields ----

const fieldChars = fc.constantFrom('a', 'b', 'z', '0', '9', ' ', ',', '"', '\n', '\r', "'", 'é', '€', '😀', '中', ';', '|', '\t');
const field = fc.array(fieldChars, { maxLength: 8 }).map((cs) => cs.join(''));
const row = fc.array(field, { minLength: 1, maxLength: 5 });
const table = fc.record({
  rows: fc.array(row, { minLength: 1, maxLength: 12 }),
  crlf: fc.boolean(),
  finalNewline: fc.boolean(),
  // fields that could be written unquoted are quoted anyway sometimes
  quoteAll: fc.boolean(),
});

function csvField(value: string, quoteAll: boolean): string {
  // A field needs quotes when it holds a delimiter, quote, CR or LF. A mid-field quote could stay
  // unquoted, but a leading one could not, so quote whenever there is any quote.
  const needs = /[",\r\n]/.test(value);
  return needs || quoteAll ? `"${value.replace(/"/g, '""')}"` : value;
}

function csvText(t: { rows: string[][]; crlf: boolean; finalNewline: boolean; quoteAll: boolean }): string {
  const eol = t.crlf ? '\r\n' : '\n';
  const lines = t.rows.map((fields) => {
    // a row of one empty field would be an empty line, which is skipped: write it quoted
    if (fields.length === 1 && fields[0] === '') return '""';
    return fields.map((f) => csvField(f, t.quoteAll)).join(',');
  });
  return lines.join(eol) + (t.finalNewline ? eol : '');
}

/** Chunk sizes covering the whole input, 1..max bytes each. */
function chunkSizes(max: number) {
  return fc.array(fc.integer({ min: 1, max }), { minLength: 1, maxLength: 300 });
}

describe('RowSplitter properties', () => {
  it('gives the same rows whatever the chunking, and each row parses back to its fields', () => {
    fc.assert(
      fc.property(table, chunkSizes(7), (t, sizes) => {
        const text = csvText(t);
        const bytes = Buffer.from(text, 'utf8');
        const whole = split(bytes);
        const chunked = split(bytes, 'csv', sizes);
        expect(chunked).toEqual(whole);
        expect(whole.unterminatedQuoteLine).toBeUndefined();
        expect(whole.rows).toHaveLength(t.rows.length);

        let line = 1;
        const eolBytes = t.crlf ? 2 : 1;
        let offset = 0;
        whole.rows.forEach((r, i) => {
          // the delimiter is given: papaparse would otherwise guess it from the row's own text
          const parsed = Papa.parse<string[]>(r.text, { newline: '\n', delimiter: ',' });
          expect(parsed.data).toEqual([t.rows[i]]);
          expect(r.offset).toBe(offset);
          expect(r.line).toBe(line);
          const rowBytes = Buffer.byteLength(r.text);
          expect(bytes.subarray(r.offset, r.offset + rowBytes).toString('utf8')).toBe(r.text);
          offset += rowBytes + eolBytes;
          line += (r.text.match(/\n/g)?.length ?? 0) + 1;
        });
      }),
      { numRuns: 400 },
    );
  });

  it('a ranged read started at a row boundary gives the same rows, offsets and lines as the whole file', () => {
    fc.assert(
      fc.property(table, fc.nat(), chunkSizes(5), (t, pick, sizes) => {
        const bytes = Buffer.from(csvText(t), 'utf8');
        const all = split(bytes).rows;
        const from = all[pick % all.length];
        const tail = split(bytes.subarray(from.offset), 'csv', sizes, from.offset, from.line).rows;
        expect(tail).toEqual(all.slice(pick % all.length));
      }),
      { numRuns: 200 },
    );
  });

  it('splits any text, stray quotes too, where reading it a byte at a time splits it', () => {
    // The rules of the module's doc comment, one byte at a time: a quote opens quoting only at a
    // field's start, a doubled quote inside quotes is a quote, a line feed outside quotes ends a row.
    const reference = (text: string) => {
      const rows: SplitRow[] = [];
      let quoted = false;
      let fieldStart = true;
      let afterQuote = false;
      let start = 0;
      let line = 1;
      let rowLine = 1;
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (quoted) {
          if (c === '"') [quoted, afterQuote] = [false, true];
          else if (c === '\n') line++;
          continue;
        }
        if (c === '"' && (fieldStart || afterQuote)) {
          [quoted, afterQuote] = [true, false];
          continue;
        }
        afterQuote = false;
        fieldStart = c === ',' || c === '\n';
        if (c !== '\n') continue;
        const row = text.slice(start, i).replace(/\r$/, '');
        if (row !== '') rows.push({ text: row, offset: start, line: rowLine });
        [start, rowLine] = [i + 1, ++line];
      }
      const last = text.slice(start).replace(/\r$/, '');
      if (!quoted && last !== '') rows.push({ text: last, offset: start, line: rowLine });
      return { rows, ...(quoted ? { unterminatedQuoteLine: -1 } : {}) };
    };
    const soup = fc.array(fc.constantFrom('a', 'b', ',', '"', '\n', '\r'), { maxLength: 60 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(soup, chunkSizes(9), (text, sizes) => {
        const { rows, unterminatedQuoteLine } = split(text, 'csv', sizes);
        const expected = reference(text);
        expect(unterminatedQuoteLine !== undefined).toBe(expected.unterminatedQuoteLine !== undefined);
        if (unterminatedQuoteLine === undefined) expect(rows).toEqual(expected.rows);
      }),
      { numRuns: 1000 },
    );
  });

  it('jsonl rows do not depend on chunking either', () => {
    const lines = fc.array(
      fc.array(fc.constantFrom('a', '"', ',', '\r', '{', 'é', '😀'), { maxLength: 6 }).map((c) => c.join('')),
      {
        maxLength: 10,
      },
    );
    fc.assert(
      fc.property(lines, chunkSizes(4), (ls, sizes) => {
        const bytes = Buffer.from(ls.join('\n'), 'utf8');
        const whole = split(bytes, 'jsonl');
        expect(split(bytes, 'jsonl', sizes)).toEqual(whole);
        const expected = ls.map((l) => l.replace(/\r$/, '')).filter((l) => l !== '');
        expect(whole.rows.map((r) => r.text)).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });
});

describe('RowSplitter with reuse', () => {
  it('gives one row object, moved from row to row, read as a new row each would be', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', ',', '"', '\n', '\r', 'é', 'x,"y\nz",w'), { maxLength: 60 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { maxLength: 10 }),
        (parts, sizes) => {
          const bytes = Buffer.from(parts.join(''), 'utf8');
          const seen: SplitRow[] = [];
          const objects = new Set<RawRow>();
          const splitter = new RowSplitter('csv', 0, 1, undefined, undefined, true);
          const onRow = (row: RawRow) => {
            objects.add(row);
            seen.push({ text: row.bytes.toString('utf8'), offset: row.offset, line: row.line });
          };
          let at = 0;
          for (const size of sizes) {
            splitter.push(bytes.subarray(at, at + size), onRow);
            at += size;
          }
          splitter.push(bytes.subarray(at), onRow);
          splitter.end(onRow);
          expect(seen).toEqual(split(bytes, 'csv', sizes).rows);
          expect(objects.size).toBeLessThanOrEqual(1);
        },
      ),
    );
  });
});
