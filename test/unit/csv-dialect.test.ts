import { describe, expect, it } from 'vitest';
import { checkDialect, DEFAULT_DIALECT, dialectForName, type CsvDialect } from '../../src/formats/csv-dialect.js';
import { detectSyntax } from '../../src/formats/input-format.js';
import { parseCsvHeader, parseRows } from '../../src/formats/row-parser.js';
import { RawRow, RowSplitter } from '../../src/formats/row-splitter.js';

const SEMICOLON: CsvDialect = { delimiter: ';', quote: '"' };
const TAB: CsvDialect = { delimiter: '\t', quote: '"' };
const PIPE_SINGLE: CsvDialect = { delimiter: '|', quote: "'" };

/** The rows' texts, fed in chunks of `chunk` bytes (0: in one piece). */
function texts(input: string, dialect: CsvDialect, chunk = 0): { rows: string[]; offsets: number[]; lines: number[]; unterminatedQuoteLine?: number } {
  const bytes = Buffer.from(input, 'utf8');
  const splitter = new RowSplitter('csv', 0, 1, dialect);
  const raw: RawRow[] = [];
  const onRow = (row: RawRow) => raw.push(row);
  const size = chunk || bytes.length || 1;
  for (let at = 0; at < bytes.length; at += size) splitter.push(bytes.subarray(at, at + size), onRow);
  const ended = splitter.end(onRow);
  return {
    rows: raw.map((r) => r.bytes.toString('utf8')),
    offsets: raw.map((r) => r.offset),
    lines: raw.map((r) => r.line),
    ...ended,
  };
}

function raw(text: string, line = 1): RawRow {
  const bytes = Buffer.from(text, 'utf8');
  return new RawRow(bytes, 0, bytes.length, 0, line);
}

describe('checkDialect', () => {
  it('accepts single ASCII characters that differ', () => {
    for (const d of [DEFAULT_DIALECT, SEMICOLON, TAB, PIPE_SINGLE, { delimiter: ',', quote: "'" }]) expect(checkDialect(d)).toBe(d);
  });

  it.each([
    [{ delimiter: '', quote: '"' }, /delimiter must be exactly one character/],
    [{ delimiter: ';;', quote: '"' }, /delimiter must be exactly one character, not ";;"/],
    [{ delimiter: ',', quote: '' }, /quote must be exactly one character/],
    [{ delimiter: '§', quote: '"' }, /delimiter must be an ASCII character/],
    [{ delimiter: ',', quote: '“' }, /quote must be an ASCII character/],
    [{ delimiter: '\n', quote: '"' }, /delimiter cannot be "\\n"/],
    [{ delimiter: ',', quote: '\r' }, /quote cannot be "\\r"/],
    [{ delimiter: "'", quote: "'" }, /both "'"; they must differ/],
    [{ delimiter: '"', quote: "'" }, /delimiter cannot be/],
  ])('rejects %j with a clear message', (d, message) => {
    expect(() => checkDialect(d)).toThrow(message);
  });

  it('throws a plain Error, for the caller to turn into a usage error', () => {
    let caught: unknown;
    try {
      checkDialect({ delimiter: ',', quote: ',' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(Error);
    expect((caught as Error).constructor).toBe(Error);
  });

  it('is what RowSplitter checks its dialect with', () => {
    expect(() => new RowSplitter('csv', 0, 1, { delimiter: ',', quote: ',' })).toThrow(/must differ/);
  });
});

describe('dialectForName', () => {
  it('reads .tsv and .tab, gzipped or not, as tab-separated', () => {
    for (const name of ['in.tsv', 'in.TSV', 's3://b/k/in.tab', 'in.tsv.gz', 'IN.TAB.GZ']) expect(dialectForName(name, {})).toEqual(TAB);
  });

  it('keeps a given delimiter and quote over the name', () => {
    expect(dialectForName('in.tsv', { delimiter: ';' })).toEqual(SEMICOLON);
    expect(dialectForName('in.tsv', { quote: "'" })).toEqual({ delimiter: '\t', quote: "'" });
    expect(dialectForName('in.csv', { delimiter: '|', quote: "'" })).toEqual(PIPE_SINGLE);
  });

  it('defaults to the comma and double quote for other names', () => {
    for (const name of ['in.csv', 'in.csv.gz', 'in.txt', 'tsv', 'in.tsv.bak', 'in.tsv.zip']) expect(dialectForName(name, {})).toEqual(DEFAULT_DIALECT);
  });
});

describe('detectSyntax', () => {
  it('reads .tsv and .tab as csv, whatever the first bytes', () => {
    const head = Buffer.from('{"a":1}\n');
    for (const name of ['in.tsv', 'in.tab', 'in.tsv.gz', 'in.TAB.gz']) expect(detectSyntax(name, head)).toBe('csv');
    expect(detectSyntax('in.txt', head)).toBe('jsonl');
  });
});

describe('RowSplitter with a dialect', () => {
  it('splits semicolon-separated rows; a quoted field keeps semicolons, line feeds and doubled quotes', () => {
    const input = 'id;note\n1;"a;b"\n2;"x\ny"\n3;"say ""hi"""\n4;plain,comma\n';
    const expected = ['id;note', '1;"a;b"', '2;"x\ny"', '3;"say ""hi"""', '4;plain,comma'];
    for (const chunk of [0, 1, 2, 3, 7]) expect(texts(input, SEMICOLON, chunk).rows).toEqual(expected);
  });

  it('splits tab-separated rows', () => {
    const input = 'a\tb\r\n"1\t\r\n2"\t3\r\n\r\n4\t"5"\r\n';
    const expected = ['a\tb', '"1\t\r\n2"\t3', '4\t"5"'];
    for (const chunk of [0, 1, 4]) {
      const result = texts(input, TAB, chunk);
      expect(result.rows).toEqual(expected);
      expect(result.lines).toEqual([1, 2, 5]);
      expect(result.offsets).toEqual([0, 5, 18]);
    }
  });

  it('with a single quote, a quoted field opens only after the delimiter, and double quotes are text', () => {
    const input = `id|v\n1|'a|b\nc'\n2|'it''s'\n3|"open\n4|o'clock\n5|'x'\n`;
    const expected = ['id|v', `1|'a|b\nc'`, `2|'it''s'`, '3|"open', `4|o'clock`, `5|'x'`];
    for (const chunk of [0, 1, 5]) {
      const result = texts(input, PIPE_SINGLE, chunk);
      expect(result.rows).toEqual(expected);
      expect(result.unterminatedQuoteLine).toBeUndefined();
    }
  });

  it('a quote after a comma opens no field when the comma is not the delimiter', () => {
    expect(texts('a;b,"c\nd\n', SEMICOLON).rows).toEqual(['a;b,"c', 'd']);
    expect(texts('a;b;"c\nd"\n', SEMICOLON).rows).toEqual(['a;b;"c\nd"']);
  });

  it('reports an unterminated quote of the dialect', () => {
    expect(texts(`h\n'open\nmore`, PIPE_SINGLE).unterminatedQuoteLine).toBe(2);
    expect(texts(`h\n"open\nmore`, PIPE_SINGLE).unterminatedQuoteLine).toBeUndefined();
  });
});

describe('parseCsvHeader with a dialect', () => {
  it('splits the header on the delimiter and unquotes with the quote', () => {
    expect(parseCsvHeader(raw('id;"a;b";c,d'), 'in.csv', SEMICOLON)).toEqual(['id', 'a;b', 'c,d']);
    expect(parseCsvHeader(raw('\uFEFFid\tname\tprice'), 'in.tsv', TAB)).toEqual(['id', 'name', 'price']);
    expect(parseCsvHeader(raw(`id|'it''s|x'|"q"`), 'in.csv', PIPE_SINGLE)).toEqual(['id', `it's|x`, '"q"']);
  });

  it('still rejects repeated names', () => {
    expect(() => parseCsvHeader(raw('a;b;a'), 'in.csv', SEMICOLON)).toThrow(/twice/);
  });
});

describe('parseRows with a dialect', () => {
  const header = ['id', 'name', 'note'];

  it('reads semicolon-separated rows, commas being text', () => {
    const rows = parseRows([raw('1;ann;"a;b"', 2), raw('2;bob, jr;"x\ny"', 3)], 0, header, 'csv', SEMICOLON);
    expect(rows.map((r) => r.record)).toEqual([
      { id: '1', name: 'ann', note: 'a;b' },
      { id: '2', name: 'bob, jr', note: 'x\ny' },
    ]);
  });

  it('reads tab-separated rows', () => {
    const rows = parseRows([raw('1\ta b\t"c\td"'), raw('2\t\t')], 0, header, 'csv', TAB);
    expect(rows.map((r) => r.record)).toEqual([
      { id: '1', name: 'a b', note: 'c\td' },
      { id: '2', name: '', note: '' },
    ]);
  });

  it('reads single-quoted fields with doubled quotes; double quotes are text', () => {
    const rows = parseRows([raw(`1|'it''s'|'a|b'`), raw(`2|5'11"|"q"`)], 0, header, 'csv', PIPE_SINGLE);
    expect(rows.map((r) => r.record)).toEqual([
      { id: '1', name: `it's`, note: 'a|b' },
      { id: '2', name: `5'11"`, note: '"q"' },
    ]);
  });

  it('counts fields with the dialect: a comma-separated row is one field with semicolons', () => {
    const rows = parseRows([raw('1,2,3')], 0, header, 'csv', SEMICOLON);
    expect(rows[0]).toEqual({ index: 0, line: 1, text: '1,2,3', problem: 'expected 3 fields, found 1' });
  });
});
