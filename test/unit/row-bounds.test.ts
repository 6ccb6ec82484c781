import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseRows } from '../../src/formats/row-parser.js';
import { RowSplitter, type RawRow, type RowBounds, type RowSyntax } from '../../src/formats/row-splitter.js';

/** The rows a splitter gives for `parts` fed one by one, and the line of a quote never closed. */
function splitAll(parts: readonly (string | Buffer)[], syntax: RowSyntax, bounds?: RowBounds): { rows: RawRow[]; unterminated?: number } {
  const splitter = new RowSplitter(syntax, 0, 1, undefined, bounds);
  const rows: RawRow[] = [];
  for (const part of parts) splitter.push(typeof part === 'string' ? Buffer.from(part) : part, (row) => rows.push(row));
  return { rows, unterminated: splitter.end((row) => rows.push(row)).unterminatedQuoteLine };
}

/** The rows of a file whose quotes are all closed. */
function split(parts: readonly (string | Buffer)[], syntax: RowSyntax, bounds?: RowBounds): RawRow[] {
  const { rows, unterminated } = splitAll(parts, syntax, bounds);
  expect(unterminated).toBeUndefined();
  return rows;
}

/** Feeds `size` bytes of `byte` in chunks of 64 KiB, as a file read would, holding one chunk. */
function* repeated(byte: string, size: number): Generator<Buffer> {
  const chunk = Buffer.alloc(64 * 1024, byte);
  for (let left = size; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
}

const bounds: RowBounds = { maxFieldBytes: 1000, maxRowBytes: 4000 };

describe('RowSplitter bounds', () => {
  it('marks a row with a field past the field bound, keeps its beginning only, and reads the rows around it', () => {
    const rows = split(['a,b\n1,2\n3,', 'x'.repeat(1001), '\n5,6\n'], 'csv', bounds);
    expect(rows.map((r) => [r.line, r.over?.bound])).toEqual([
      [1, undefined],
      [2, undefined],
      [3, 'field'],
      [4, undefined],
    ]);
    expect(rows[2].over).toEqual({ bound: 'field', limit: 1000, rowBytes: 1003, fieldBytes: 1001 });
    expect(rows[2].text()).toBe(`3,${'x'.repeat(1001)}`.slice(0, 1003));
    expect(rows[3].offset).toBe(8 + 1003 + 1);
  });

  it('takes a field of exactly the bound, and a row of exactly the bound ending in CRLF', () => {
    const exact = `${'y'.repeat(1000)},${'z'.repeat(999)}`;
    const rows = split([`${exact}\r\n`, `${'a,'.repeat(1999)}b\r\n`], 'csv', bounds);
    expect(rows.map((r) => r.over)).toEqual([undefined, undefined]);
    expect(rows[1].text()).toHaveLength(3999);
  });

  it('reads past a row longer than the row bound in many chunks, holding none of it, and names its longest field', () => {
    const long = `1,${'x'.repeat(3000)},${'y'.repeat(3000)}`;
    const parts = ['h,i,j\n', ...long.match(/.{1,700}/gs)!, '\n2,3,4\n'];
    const rows = split(parts, 'csv', bounds);
    expect(rows.map((r) => r.over?.bound)).toEqual([undefined, 'field', undefined]);
    expect(rows[1].over).toEqual({ bound: 'field', limit: 1000, rowBytes: long.length, fieldBytes: 3000 });
    expect(rows[1].bytes.length).toBeLessThanOrEqual(1024);
    expect([rows[1].offset, rows[2].offset, rows[2].line]).toEqual([6, 6 + long.length + 1, 3]);
  });

  it('marks a row of many short fields past the row bound as the row', () => {
    const long = Array.from({ length: 900 }, (_, i) => `v${i}`).join(',') + ',' + 'w,'.repeat(800) + 'end';
    const rows = split(['a\n', long.slice(0, 2500), long.slice(2500), '\nb\n'], 'csv', bounds);
    expect(rows[1].over).toEqual({ bound: 'row', limit: 4000, rowBytes: long.length, fieldBytes: 4 });
    expect(rows.map((r) => r.text())).toEqual(['a', expect.stringMatching(/^v0,v1,/), 'b']);
  });

  it('reads a long quoted field with line feeds inside to its closing quote, counting its lines', () => {
    const quoted = `"${'line\n'.repeat(2000)}end"`;
    const rows = split(['id,note\n1,', quoted.slice(0, 5000), quoted.slice(5000), ',x\n2,"short\nnote",y\n'], 'csv', bounds);
    expect(rows.map((r) => [r.line, r.over?.bound])).toEqual([
      [1, undefined],
      [2, 'field'],
      [2 + 2000 + 1, undefined],
    ]);
    expect(rows[1].over!.fieldBytes).toBe(quoted.length);
    expect(rows[2].text()).toBe('2,"short\nnote",y');
  });

  it('reports an unterminated quote in a long row with the line it opened on', () => {
    const splitter = new RowSplitter('csv', 0, 1, undefined, bounds);
    const rows: RawRow[] = [];
    splitter.push(Buffer.from(`a\nb\n"${'q\n'.repeat(3000)}`), (r) => rows.push(r));
    expect(splitter.end((r) => rows.push(r))).toEqual({ unterminatedQuoteLine: 3 });
    expect(rows).toHaveLength(2);
  });

  it('measures JSON Lines fields as strings, escapes counted as written, and long lines as rows', () => {
    const escaped = JSON.stringify({ note: 'a"\\'.repeat(400) });
    const manyKeys = JSON.stringify(Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])));
    const rows = split([`{"a":1}\n${escaped}\n`, `{"b":"${'x'.repeat(1001)}"}\n`, `${manyKeys}\n`, '{"c":2}'], 'jsonl', bounds);
    expect(rows.map((r) => r.over?.bound)).toEqual([undefined, 'field', 'field', 'row', undefined]);
    expect(rows[1].over!.fieldBytes).toBe(2000);
    expect(rows[2].over!.fieldBytes).toBe(1001);
    expect(rows[3].over!.rowBytes).toBe(manyKeys.length);
  });

  it('reads past a JSON Lines line longer than the row bound in many chunks, naming its longest string', () => {
    const line = JSON.stringify({ id: 7, note: 'é'.repeat(1500), tags: Array.from({ length: 400 }, (_, i) => `t${i}`) });
    const parts = ['{"id":6}\n', ...line.match(/.{1,300}/gs)!, '\n{"id":8}'];
    const rows = split(parts, 'jsonl', bounds);
    expect(rows.map((r) => r.over?.bound)).toEqual([undefined, 'field', undefined]);
    expect(rows[1].over).toMatchObject({ rowBytes: Buffer.byteLength(line), fieldBytes: 3000 });
    expect(rows[1].text().startsWith('{"id":7,"note":"é')).toBe(true);
    expect(rows[2].text()).toBe('{"id":8}');
  });

  it('reads past a 64 MiB field with a 1 MiB bound, holding about the bound', () => {
    const splitter = new RowSplitter('csv', 0, 1, undefined, { maxFieldBytes: 1 << 20, maxRowBytes: 4 << 20 });
    const rows: RawRow[] = [];
    const onRow = (r: RawRow) => rows.push(r);
    splitter.push(Buffer.from('id,text\n1,'), onRow);
    const before = process.memoryUsage().arrayBuffers;
    let most = 0;
    for (const chunk of repeated('x', 64 << 20)) {
      splitter.push(chunk, onRow);
      most = Math.max(most, process.memoryUsage().arrayBuffers - before);
    }
    splitter.push(Buffer.from('\n2,two\n'), onRow);
    splitter.end(onRow);
    expect(rows.map((r) => r.over?.bound)).toEqual([undefined, 'field', undefined]);
    expect(rows[1].over).toMatchObject({ rowBytes: (64 << 20) + 2, fieldBytes: 64 << 20 });
    expect(most).toBeLessThan(8 << 20);
  });

  it('parseRows quarantines a row past a bound with the problem the caller names and an excerpt of its beginning', () => {
    const rows = split(['1,2\n', `3,${'é'.repeat(3000)}\n`, '5,6\n'], 'csv', bounds);
    const parsed = parseRows(rows, 10, ['a', 'b'], 'csv', undefined, false, (over) => `past ${over.bound} ${over.limit}`);
    expect(parsed.map((r) => [r.index, r.problem])).toEqual([
      [10, undefined],
      [11, 'past field 1000'],
      [12, undefined],
    ]);
    expect(parsed[1].text).toMatch(/^3,é+\.\.\. \d+ more bytes$/);
    expect(Buffer.byteLength(parsed[1].text!)).toBeLessThanOrEqual(1024);
    expect(parsed[2].record).toEqual({ a: '5', b: '6' });
  });
});

describe('RowSplitter bounds properties', () => {
  const csvText = fc.array(fc.constantFrom('a', 'bb', ',', '"', '\n', '\r\n', 'xxxxxxxx', 'é'), { maxLength: 200 }).map((parts) => parts.join(''));

  it('cut rows where an unbounded splitter does, mark every row past the row bound, and mark the same rows however the bytes come', () => {
    fc.assert(
      fc.property(csvText, fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 20 }), fc.constantFrom<RowSyntax>('csv', 'jsonl'), (text, sizes, syntax) => {
        const bytes = Buffer.from(text);
        const small: RowBounds = { maxFieldBytes: 6, maxRowBytes: 20 };
        const whole = splitAll([bytes], syntax);
        const parts: Buffer[] = [];
        let at = 0;
        for (const size of sizes) parts.push(bytes.subarray(at, (at += size)));
        parts.push(bytes.subarray(at));
        const bounded = splitAll(parts, syntax, small);
        const oneChunk = splitAll([bytes], syntax, small);
        expect(bounded.unterminated).toBe(whole.unterminated);
        expect(bounded.rows.map((r) => [r.offset, r.line])).toEqual(whole.rows.map((r) => [r.offset, r.line]));
        expect(bounded.rows.map((r) => r.over)).toEqual(oneChunk.rows.map((r) => r.over));
        for (const [i, row] of bounded.rows.entries()) {
          const full = whole.rows[i].bytes;
          if (!row.over) expect(row.bytes.equals(full)).toBe(true);
          else expect(row.bytes.equals(full.subarray(0, row.bytes.length))).toBe(true);
          if (full.length > small.maxRowBytes) expect(row.over).toBeDefined();
          if (row.over) expect(row.over.rowBytes).toBe(full.length);
          if (row.over?.bound === 'field') expect(row.over.fieldBytes).toBeGreaterThan(small.maxFieldBytes);
        }
      }),
    );
  });
});
