import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import Papa from 'papaparse';
import { DEFAULT_DIALECT } from '../../src/formats/csv-dialect.js';
import { MAX_ROW_DEPTH, quotedFieldBounds } from '../../src/formats/row-parser.js';
import { inputColumns, RequestEncoder, requestValue } from '../../src/scoring/request-row.js';

/** One row, as a segment's encoder encodes it: its JSON text and its length in bytes. */
function encodeRequestRow(record: Record<string, unknown>, sent: string[], fromCsv: boolean, rowIdMember: string | undefined, rowId: number) {
  const encoder = new RequestEncoder(sent, fromCsv, rowIdMember, undefined, true);
  const bytes = encoder.encode(record, rowId);
  expectValuesSent(encoder, sent, rowIdMember);
  return { json: encoder.text(), bytes };
}

/** The values an encoder kept for the input profile are those its JSON sent, column by column (as JSON: -0 is 0). */
function expectValuesSent(encoder: RequestEncoder, sent: string[], rowIdMember: string | undefined): void {
  const members = JSON.parse(encoder.text()) as Record<string, unknown>;
  expect(JSON.stringify(encoder.values)).toBe(JSON.stringify(inputColumns(sent, rowIdMember).map((c) => members[c])));
}

/** What the encoder must write: JSON.stringify of the row's object of request values. */
function reference(record: Record<string, unknown>, sent: string[], fromCsv: boolean, rowIdMember: string | undefined, rowId: number): string {
  const object: Record<string, unknown> = {};
  for (const c of sent) if (c !== rowIdMember) object[c] = requestValue(record[c], fromCsv);
  if (rowIdMember !== undefined) object[rowIdMember] = rowId;
  return JSON.stringify(object);
}

describe('requestValue (csv)', () => {
  it('turns an empty value into null', () => {
    expect(requestValue('', true)).toBeNull();
  });

  it.each([
    ['0', 0],
    ['5', 5],
    ['-5', -5],
    ['123', 123],
    ['3.25', 3.25],
    ['-0.5', -0.5],
    ['0.10', 0.1],
    ['1e3', 1000],
    ['2.5E-2', 0.025],
    ['1e+2', 100],
  ])('turns the canonical number %j into a number', (text, n) => {
    expect(requestValue(text, true)).toBe(n);
  });

  it('turns "-0" into the number -0, which JSON writes as 0', () => {
    const value = requestValue('-0', true);
    expect(typeof value).toBe('number');
    expect(Object.is(value, -0)).toBe(true);
    expect(JSON.stringify(value)).toBe('0');
  });

  it.each([
    ['a leading zero', '00123'],
    ['a zero before digits', '01'],
    ['an overflowing exponent', '1e999'],
    ['a negative overflow', '-1e999'],
    ['a leading space', ' 5'],
    ['a trailing space', '5 '],
    ['a trailing dot', '5.'],
    ['a leading dot', '.5'],
    ['a plus sign', '+5'],
    ['hex', '0x10'],
    ['a thousands separator', '1,000'],
    ['a decimal comma', '3,5'],
    ['Infinity', 'Infinity'],
    ['NaN', 'NaN'],
    ['text', 'abc'],
    ['a date', '2024-01-02'],
    ['a lone minus', '-'],
    ['a bare exponent', 'e5'],
    ['an underscore separator', '1_000'],
    ['a space', ' '],
  ])('keeps %s as text', (_what, text) => {
    expect(requestValue(text, true)).toBe(text);
  });
});

describe('requestValue (JSON Lines)', () => {
  it('passes values as they are', () => {
    const nested = { a: [1, 'x'] };
    expect(requestValue('5', false)).toBe('5');
    expect(requestValue('', false)).toBe('');
    expect(requestValue('00123', false)).toBe('00123');
    expect(requestValue(7.5, false)).toBe(7.5);
    expect(requestValue(true, false)).toBe(true);
    expect(requestValue(null, false)).toBeNull();
    expect(requestValue(nested, false)).toBe(nested);
  });

  it('sends a missing member as null', () => {
    expect(requestValue(undefined, false)).toBeNull();
  });
});

describe('requestEncoder', () => {
  it('sends only the sent columns, in their order, then the row id member', () => {
    const record = { extra: 'drop me', b: '2', a: 'x', c: '' };
    const encoded = encodeRequestRow(record, ['a', 'b', 'c'], true, '__service_row_id', 17);
    expect(encoded.json).toBe('{"a":"x","b":2,"c":null,"__service_row_id":17}');
    expect(JSON.parse(encoded.json)).not.toHaveProperty('extra');
  });

  it('sends a sent column the record lacks as null', () => {
    const encoded = encodeRequestRow({ a: 1 }, ['a', 'b'], false, '__mindsdb_row_id', 0);
    expect(JSON.parse(encoded.json)).toEqual({ a: 1, b: null, __mindsdb_row_id: 0 });
  });

  it('passes JSON Lines values unchanged', () => {
    const encoded = encodeRequestRow({ a: '00123', b: { deep: [1, null] }, c: false }, ['a', 'b', 'c'], false, 'rid', 3);
    expect(JSON.parse(encoded.json)).toEqual({ a: '00123', b: { deep: [1, null] }, c: false, rid: 3 });
  });

  it('overrides an input column named like the row id member with the row id', () => {
    const encoded = encodeRequestRow({ rid: 'user value' }, ['rid'], true, 'rid', 9);
    expect(JSON.parse(encoded.json)).toEqual({ rid: 9 });
  });

  it('counts bytes as the UTF-8 length of the JSON, not its characters', () => {
    const encoded = encodeRequestRow({ name: 'Zürich €😀', q: 'say "hi"\n' }, ['name', 'q'], true, 'rid', 1);
    expect(encoded.bytes).toBe(Buffer.from(encoded.json, 'utf8').length);
    expect(encoded.bytes).toBeGreaterThan(encoded.json.length);
    expect(JSON.parse(encoded.json)).toEqual({ name: 'Zürich €😀', q: 'say "hi"\n', rid: 1 });
  });

  it('sends nothing but the row id when no column is sent', () => {
    const encoded = encodeRequestRow({ a: '1' }, [], true, 'rid', 2);
    expect(encoded).toEqual({ json: '{"rid":2}', bytes: 9 });
  });
});

describe('RequestEncoder against JSON.stringify', () => {
  const chars = fc.constantFrom(
    'a',
    'Z',
    '0',
    '1',
    '9',
    '-',
    '.',
    'e',
    'E',
    '+',
    ' ',
    '"',
    '\\',
    '\n',
    '\t',
    '\u0001',
    '\u007f',
    'é',
    '中',
    '😀',
    '\u2028',
    '\ud800',
  );
  const text = fc.oneof(
    fc.string({ unit: chars, maxLength: 20 }),
    fc.integer().map(String),
    fc.double().map(String),
    fc.bigInt().map(String),
    fc.constantFrom('', '-0', '00', '007', '-', '1e5', '1.0', '123456789012345', '-123456789012345', '1234567890123456', '9007199254740993'),
  );
  const columns = ['a', 'b', 'naïve "c"', 'd'];

  it('writes the bytes JSON.stringify writes for CSV rows', () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 4, maxLength: 4 }), fc.nat(), (values, rowId) => {
        const record = Object.fromEntries(columns.map((c, i) => [c, values[i]]));
        for (const rowIdMember of [undefined, 'rid', 'b']) {
          const encoded = encodeRequestRow(record, columns, true, rowIdMember, rowId);
          const expected = reference(record, columns, true, rowIdMember, rowId);
          expect(encoded.json).toBe(expected);
          expect(encoded.bytes).toBe(Buffer.byteLength(expected));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("writes a CSV row given as its text as it writes the row's record, the file's columns in any order", () => {
    // The file's columns: the sent ones in another order, one not sent, and one sent column ('d') missing.
    const fileColumns = ['c2', 'naïve "c"', 'b', 'a', 'kept'];
    const unquoted = text.filter((v) => !v.includes(',') && !v.includes('"'));
    fc.assert(
      fc.property(fc.array(unquoted, { minLength: 5, maxLength: 5 }), fc.nat(), (values, rowId) => {
        const record = Object.fromEntries(fileColumns.map((c, i) => [c, values[i]]));
        for (const rowIdMember of [undefined, 'rid', 'b']) {
          const encoder = new RequestEncoder(columns, true, rowIdMember, { columns: fileColumns, delimiter: ',', quote: '"' }, true);
          const bytes = encoder.encodeText(values.join(','), rowId);
          expectValuesSent(encoder, columns, rowIdMember);
          // encode is checked against JSON.stringify above; a column missing from the file is sent as null by both.
          expect({ json: encoder.text(), bytes }).toEqual(encodeRequestRow(record, columns, true, rowIdMember, rowId));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("writes a CSV row with quotes given as its text as it writes the row's record", () => {
    const fileColumns = ['c2', 'naïve "c"', 'b', 'a', 'kept'];
    fc.assert(
      fc.property(fc.array(text, { minLength: 5, maxLength: 5 }), fc.boolean(), fc.nat(), (values, quoteAll, rowId) => {
        const row = Papa.unparse([values], { quotes: quoteAll, newline: '\n' });
        fc.pre(row.includes('"') && quotedFieldBounds(row, DEFAULT_DIALECT, []) === 5);
        const record = Object.fromEntries(fileColumns.map((c, i) => [c, values[i]]));
        for (const rowIdMember of [undefined, 'rid', 'b']) {
          const encoder = new RequestEncoder(columns, true, rowIdMember, { columns: fileColumns, ...DEFAULT_DIALECT }, true);
          const bytes = encoder.encodeText(row, rowId);
          expectValuesSent(encoder, columns, rowIdMember);
          expect({ json: encoder.text(), bytes }).toEqual(encodeRequestRow(record, columns, true, rowIdMember, rowId));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('encodes nothing from a text with another field count than the file has columns; encodeRow then reads it as parseRows does', () => {
    const csv = { columns: ['a', 'b'], delimiter: ';', quote: "'" };
    const encoder = new RequestEncoder(['a'], true, undefined, csv);
    expect(encoder.encodeText('1;x', 0)).toBe(7);
    expect(encoder.encodeText('1;x;y', 0)).toBe(-1);
    expect(encoder.encodeText('1', 0)).toBe(-1);
    expect(encoder.encodeText("'1' ;x", 0)).toBe(-1);
    expect(encoder.encodeRow({ index: 3, line: 5, text: '1;x;y' })).toEqual({ index: 3, line: 5, text: '1;x;y', problem: 'expected 2 fields, found 3' });
    // Odd quoting (text after a closing quote) is read by papaparse, as parseRows reads it, and encoded from its record.
    const read = encoder.encodeRow({ index: 4, line: 6, text: "'1' ;x" });
    expect(read).toEqual({ index: 4, line: 6, text: "'1' ;x", record: { a: '1', b: 'x' } });
    expect(encoder.text()).toBe('{"a":1}');
    const row = { index: 5, line: 7, text: '2;y' };
    expect(encoder.encodeRow(row)).toBe(row);
    expect(encoder.text()).toBe('{"a":2}');
  });

  it('writes the bytes JSON.stringify writes for JSON Lines values', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.jsonValue(), text, fc.constant(undefined)), { minLength: 4, maxLength: 4 }), (values) => {
        const record = Object.fromEntries(columns.map((c, i) => [c, values[i]]));
        const encoded = encodeRequestRow(record, columns, false, 'rid', 5);
        expect(encoded.json).toBe(reference(record, columns, false, 'rid', 5));
      }),
      { numRuns: 500 },
    );
  });

  it('encodes a JSON Lines row as deep as the parser takes (MAX_ROW_DEPTH) as JSON.stringify does', () => {
    const text = `{"a":${'[1,'.repeat(MAX_ROW_DEPTH - 1)}"€"${']'.repeat(MAX_ROW_DEPTH - 1)}}`;
    const record = JSON.parse(text) as Record<string, unknown>;
    expect(encodeRequestRow(record, ['a'], false, 'rid', 3).json).toBe(reference(record, ['a'], false, 'rid', 3));
  });

  it('grows past its first buffer for a long row, and starts each row afresh', () => {
    const encoder = new RequestEncoder(['a'], true, undefined);
    const long = 'x'.repeat(5000) + '€';
    expect(encoder.encode({ a: long }, 0)).toBe(Buffer.byteLength(JSON.stringify({ a: long })));
    expect(encoder.text()).toBe(JSON.stringify({ a: long }));
    encoder.encode({ a: '7' }, 1);
    expect(encoder.text()).toBe('{"a":7}');
  });
});

describe('numbers that would lose their meaning stay text', () => {
  it.each(['9007199254740993', '12345678901234567890', '1e-999', '1e999'])('%s', (text) => {
    expect(requestValue(text, true)).toBe(text);
  });
  it.each([
    ['0', 0],
    ['0.0', 0],
    ['0e5', 0],
    ['9007199254740991', 9007199254740991],
    ['1.5e-300', 1.5e-300],
  ])('%s is a number', (text, n) => {
    expect(requestValue(text, true)).toBe(n);
  });
});
