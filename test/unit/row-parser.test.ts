import fc from 'fast-check';
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { csvRecord, type InputRow, jsonKeys, MAX_ROW_DEPTH, parseCsvHeader, parseRows, quotedRowFields, readTextRow } from '../../src/formats/row-parser.js';
import { RawRow } from '../../src/formats/row-splitter.js';
import { DEFAULT_DIALECT } from '../../src/formats/csv-dialect.js';
import { thrown } from '../helpers/rejection.js';

function raw(text: string, line = 1, offset = 0): RawRow {
  const bytes = Buffer.from(text, 'utf8');
  return new RawRow(bytes, 0, bytes.length, offset, line);
}

function headerError(text: string, fileName = 'in.csv'): InputError {
  return thrown(() => parseCsvHeader(raw(text), fileName), InputError);
}

describe('parseCsvHeader', () => {
  it('answers the column names in order', () => {
    expect(parseCsvHeader(raw('id,name,price'), 'in.csv')).toEqual(['id', 'name', 'price']);
  });

  it('strips a UTF-8 byte order mark from the first name', () => {
    expect(parseCsvHeader(raw('\uFEFFid,name'), 'in.csv')).toEqual(['id', 'name']);
    expect(parseCsvHeader(raw('\uFEFF"quoted, id",name'), 'in.csv')).toEqual(['quoted, id', 'name']);
  });

  it('reads quoted names with commas, quotes and line feeds', () => {
    expect(parseCsvHeader(raw('"a,b","say ""x""","two\nlines"'), 'in.csv')).toEqual(['a,b', 'say "x"', 'two\nlines']);
  });

  it('keeps non-ASCII names', () => {
    expect(parseCsvHeader(raw('größe,价格'), 'in.csv')).toEqual(['größe', '价格']);
  });

  it('rejects a repeated name, naming the file and the column', () => {
    const err = headerError('id,price,id', 'rentals.csv');
    expect(err.code).toBe('E_INPUT');
    expect(err.message).toContain('rentals.csv');
    expect(err.message).toContain('"id"');
    expect(err.message).toMatch(/twice/);
  });

  it('rejects an empty or blank name, naming the file and the column number', () => {
    const err = headerError('id,,price', 'rentals.csv');
    expect(err.code).toBe('E_INPUT');
    expect(err.message).toContain('rentals.csv');
    expect(err.message).toContain('column 2');
    expect(headerError('id,price,  ').message).toContain('column 3');
    expect(headerError('id,price,').message).toContain('column 3');
  });

  it('exits with code 1 for malformed input', () => {
    expect(headerError('a,a').exitCode).toBe(1);
  });
});

describe('jsonKeys', () => {
  it("answers an object row's keys, in order, empty names included", () => {
    expect(jsonKeys(raw('{"id":1,"name":"x","nested":{"a":1},"n":null}'))).toEqual(['id', 'name', 'nested', 'n']);
    expect(jsonKeys(raw('{"":1,"a":2}'))).toEqual(['', 'a']);
  });

  it.each([
    ['an array', '[1,2]'],
    ['a number', '42'],
    ['null', 'null'],
    ['a string', '"id"'],
    ['bad JSON', '{"id":'],
  ])('answers undefined for %s (the row is quarantined later)', (_what, text) => {
    expect(jsonKeys(raw(text))).toBeUndefined();
  });
});

describe('parseRows (csv)', () => {
  const header = ['id', 'name', 'price'];

  it('keys the values by the header, as strings as written, and keeps the text as read', () => {
    const rows = parseRows([raw('1,ann,10.5', 2), raw('2,"bob, jr",', 3)], 0, header, 'csv');
    expect(rows).toEqual([
      { index: 0, line: 2, record: { id: '1', name: 'ann', price: '10.5' }, text: '1,ann,10.5' },
      { index: 1, line: 3, record: { id: '2', name: 'bob, jr', price: '' }, text: '2,"bob, jr",' },
    ]);
  });

  it("carries firstIndex and each row's line, also after multi-line fields", () => {
    const rows = parseRows([raw('7,"a\nb",1', 10), raw('8,c,2', 12)], 500, header, 'csv');
    expect(rows.map((r) => [r.index, r.line])).toEqual([
      [500, 10],
      [501, 12],
    ]);
    expect(rows[0].record).toEqual({ id: '7', name: 'a\nb', price: '1' });
  });

  it('keeps quoted CRLFs, escaped quotes, inch marks and non-ASCII text', () => {
    const rows = parseRows([raw('1,"x\r\ny","say ""hi"""', 2), raw(`2,5'11",€ 9`, 4)], 0, header, 'csv');
    expect(rows.map((r) => r.record)).toEqual([
      { id: '1', name: 'x\r\ny', price: 'say "hi"' },
      { id: '2', name: `5'11"`, price: '€ 9' },
    ]);
  });

  it('reports a row with too few or too many fields, with its text, and keeps the others', () => {
    const rows = parseRows([raw('1,a', 2), raw('2,b,3', 3), raw('3,c,4,extra', 4)], 0, header, 'csv');
    expect(rows[0]).toEqual({ index: 0, line: 2, text: '1,a', problem: 'expected 3 fields, found 2' });
    expect(rows[0].record).toBeUndefined();
    expect(rows[1]).toEqual({ index: 1, line: 3, record: { id: '2', name: 'b', price: '3' }, text: '2,b,3' });
    expect(rows[2]).toEqual({ index: 2, line: 4, text: '3,c,4,extra', problem: 'expected 3 fields, found 4' });
  });

  it('does not shift rows when one row has odd quoting', () => {
    // the malformed quote would make papaparse read the rest of the batch as one field
    const rows = parseRows([raw('1,"a"x,1', 2), raw('2,b,2', 3), raw('3,c,3', 4)], 0, header, 'csv');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({ text: '1,"a"x,1' });
    expect(rows[0].problem).toMatch(/^expected 3 fields, found \d+$/);
    expect(rows.map((r) => [r.index, r.line])).toEqual([
      [0, 2],
      [1, 3],
      [2, 4],
    ]);
    expect(rows[1].record).toEqual({ id: '2', name: 'b', price: '2' });
    expect(rows[2].record).toEqual({ id: '3', name: 'c', price: '3' });
  });

  it('reads a single-column file', () => {
    const rows = parseRows([raw('x', 2), raw('""', 3)], 0, ['only'], 'csv');
    expect(rows.map((r) => r.record)).toEqual([{ only: 'x' }, { only: '' }]);
  });

  it('reads each row as papaparse reads it alone, quoted or not, in any dialect; csvRecord reads its text alike', () => {
    const field = fc.array(fc.constantFrom('a', '1', ' ', ',', ';', '"', "'", '\n', 'é'), { maxLength: 5 }).map((cs) => cs.join(''));
    const dialects = [
      { delimiter: ',', quote: '"' },
      { delimiter: ';', quote: "'" },
    ];
    fc.assert(
      fc.property(
        fc.array(fc.array(field, { minLength: 3, maxLength: 3 }), { maxLength: 8 }),
        fc.constantFrom(...dialects),
        fc.boolean(),
        (table, dialect, quoteAll) => {
          const texts = table
            .map((values) =>
              Papa.unparse([values], { delimiter: dialect.delimiter, quoteChar: dialect.quote, escapeChar: dialect.quote, quotes: quoteAll, newline: '\n' }),
            )
            .filter((t) => t !== '');
          const rows = parseRows(
            texts.map((t, i) => raw(t, i + 2)),
            0,
            header,
            'csv',
            dialect,
          );
          texts.forEach((text, i) => {
            const alone = Papa.parse<string[]>(text, { delimiter: dialect.delimiter, quoteChar: dialect.quote, escapeChar: dialect.quote, newline: '\n' })
              .data[0];
            expect(rows[i].record).toEqual(Object.fromEntries(header.map((c, k) => [c, alone[k]])));
            expect(csvRecord(text, header, dialect)).toEqual(rows[i].record);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('reads a row with quotes by hand as papaparse reads it alone, or leaves it to papaparse', () => {
    const dialects = [
      { delimiter: ',', quote: '"' },
      { delimiter: ';', quote: "'" },
    ];
    const text = fc.array(fc.constantFrom('a', 'é', ' ', ',', ';', '"', "'", '\n', '\r'), { maxLength: 14 }).map((cs) => cs.join(''));
    fc.assert(
      fc.property(text, fc.constantFrom(...dialects), (t, dialect) => {
        // parseRows asks only about rows holding a quote.
        fc.pre(t.includes(dialect.quote));
        const fields = quotedRowFields(t, dialect);
        if (fields === undefined) return;
        const alone = Papa.parse<string[]>(t, { delimiter: dialect.delimiter, quoteChar: dialect.quote, escapeChar: dialect.quote, newline: '\n' });
        expect(alone.data).toEqual([fields]);
      }),
      { numRuns: 3000 },
    );
    expect(quotedRowFields('L1,3,"has a ""view""",,"x,\ny"', DEFAULT_DIALECT)).toEqual(['L1', '3', 'has a "view"', '', 'x,\ny']);
    expect(quotedRowFields(`5'11",ok`, DEFAULT_DIALECT)).toEqual([`5'11"`, 'ok']);
    for (const odd of ['"a"b,c', '"never closed,x', 'a\nb,"c"']) expect(quotedRowFields(odd, DEFAULT_DIALECT)).toBeUndefined();
  });

  it('answers nothing for no rows', () => {
    expect(parseRows([], 0, header, 'csv')).toEqual([]);
  });

  it('with unquotedAsText, leaves every row as its text, and readTextRow reads one as parseRows does without', () => {
    const texts = ['1,ann,10.5', '2,"bob, jr",', '3,x', '4,,,', '5,"a" ,c', '6,"say ""hi""",'];
    const raws = texts.map((t, i) => raw(t, i + 2));
    const rows = parseRows(raws, 0, header, 'csv', DEFAULT_DIALECT, true);
    expect(rows).toEqual(texts.map((text, i) => ({ index: i, line: i + 2, text })));
    const read = rows.map((row) => readTextRow(row as InputRow & { text: string }, header, DEFAULT_DIALECT));
    expect(read).toEqual(parseRows(raws, 0, header, 'csv'));
    expect(read.slice(2, 5)).toEqual([
      { index: 2, line: 4, text: '3,x', problem: 'expected 3 fields, found 2' },
      { index: 3, line: 5, text: '4,,,', problem: 'expected 3 fields, found 4' },
      { index: 4, line: 6, text: '5,"a" ,c', record: csvRecord('5,"a" ,c', header) },
    ]);
    expect(read[4].record).toBeDefined();
  });

  it("csvRecord answers undefined for a text whose field count is not the header's", () => {
    expect(csvRecord('a,b', header)).toBeUndefined();
    expect(csvRecord('"a\nb",c', ['x', 'y'])).toEqual({ x: 'a\nb', y: 'c' });
  });
});

describe('parseRows (jsonl)', () => {
  const header = ['id', 'name'];

  it('passes parsed values as they are, with index and line', () => {
    const rows = parseRows([raw('{"id":1,"name":"a","extra":[1,2]}', 2), raw('{"name":null}', 3)], 10, header, 'jsonl');
    expect(rows).toEqual([
      { index: 10, line: 2, record: { id: 1, name: 'a', extra: [1, 2] }, text: '{"id":1,"name":"a","extra":[1,2]}' },
      { index: 11, line: 3, record: { name: null }, text: '{"name":null}' },
    ]);
  });

  it('reports bad JSON and non-object rows as problems with their text', () => {
    const rows = parseRows([raw('{"id":1', 2), raw('[1,2]', 3), raw('5', 4), raw('null', 5), raw('{"id":2}', 6)], 0, header, 'jsonl');
    expect(rows[0]).toEqual({ index: 0, line: 2, text: '{"id":1', problem: 'not valid JSON' });
    expect(rows[1]).toEqual({ index: 1, line: 3, text: '[1,2]', problem: 'not a JSON object' });
    expect(rows[2]).toEqual({ index: 2, line: 4, text: '5', problem: 'not a JSON object' });
    expect(rows[3]).toEqual({ index: 3, line: 5, text: 'null', problem: 'not a JSON object' });
    expect(rows[4]).toEqual({ index: 4, line: 6, record: { id: 2 }, text: '{"id":2}' });
  });

  it('reports a row nested deeper than MAX_ROW_DEPTH as a problem with its line, keeping no record', () => {
    const nest = (levels: number) => `{"id":1,"name":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
    const deepest = nest(MAX_ROW_DEPTH);
    const tooDeep = nest(MAX_ROW_DEPTH + 1);
    const farTooDeep = nest(200_000);
    const rows = parseRows([raw(deepest, 2), raw(tooDeep, 3), raw(farTooDeep, 4), raw('{"id":"[{"}', 5)], 0, header, 'jsonl');
    expect(rows[0].record).toEqual(JSON.parse(deepest));
    expect(rows[0].problem).toBeUndefined();
    expect(rows[1]).toEqual({ index: 1, line: 3, text: tooDeep, problem: `nested more than ${MAX_ROW_DEPTH} levels deep; flatten the row` });
    expect(rows[2]).toMatchObject({ index: 2, line: 4, problem: `nested more than ${MAX_ROW_DEPTH} levels deep; flatten the row` });
    expect(rows[2].record).toBeUndefined();
    // Brackets inside a string are text, not nesting.
    expect(rows[3]).toEqual({ index: 3, line: 5, record: { id: '[{' }, text: '{"id":"[{"}' });
  });
});

describe('the CSV delimiter is always a comma', () => {
  const raw = (text: string, line = 1): RawRow => new RawRow(Buffer.from(text), 0, Buffer.byteLength(text), 0, line);
  it('keeps values with semicolons, pipes and tabs whole', () => {
    expect(parseCsvHeader(raw('id,a;b;c'), 'f.csv')).toEqual(['id', 'a;b;c']);
    const rows = parseRows([raw('1,a;b;c'), raw('2,x|y|z'), raw('3,p\tq\tr')], 0, ['id', 'tags'], 'csv');
    expect(rows.map((r) => r.record)).toEqual([
      { id: '1', tags: 'a;b;c' },
      { id: '2', tags: 'x|y|z' },
      { id: '3', tags: 'p\tq\tr' },
    ]);
  });
});
