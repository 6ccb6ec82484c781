import { describe, expect, it } from 'vitest';
import { requestEncoder, requestValue } from '../../src/pipeline/request-row.js';

/** One row, as a segment's encoder encodes it. */
const encodeRequestRow = (record: Record<string, unknown>, sent: string[], fromCsv: boolean, rowIdMember: string | undefined, rowId: number) =>
  requestEncoder(sent, fromCsv, rowIdMember)(record, rowId);

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
