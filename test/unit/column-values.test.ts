import { describe, expect, it } from 'vitest';
import { columnValueType, valueReader } from '../../src/database/column-values.js';
import { queryProblem } from '../../src/database/row-source.js';
import { requestValue } from '../../src/scoring/request-row.js';

/** Type OIDs, as pg_type has them. */
const OID = { bool: 16, bytea: 17, int8: 20, int2: 21, int4: 23, text: 25, json: 114, float4: 700, float8: 701, varchar: 1043, date: 1082 };
const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;
const NUMERIC = 1700;
const JSONB = 3802;
const UUID = 2950;
const INTERVAL = 1186;

describe('column values read from the server text', () => {
  it('reads numbers as numbers, within what a double holds exactly', () => {
    expect(valueReader(OID.int2)('-7')).toBe(-7);
    expect(valueReader(OID.int4)('2147483647')).toBe(2147483647);
    expect(valueReader(OID.int8)('9007199254740991')).toBe(9007199254740991);
    // Past 2^53 a number would change the id: its digits are kept.
    expect(valueReader(OID.int8)('9007199254740993')).toBe('9007199254740993');
    expect(valueReader(OID.int8)('-9223372036854775808')).toBe('-9223372036854775808');
    expect(valueReader(NUMERIC)('1.50')).toBe(1.5);
    expect(valueReader(NUMERIC)('-0.000123')).toBe(-0.000123);
    expect(valueReader(NUMERIC)('123456789012345678901234')).toBe('123456789012345678901234');
    expect(valueReader(NUMERIC)(`0.${'0'.repeat(400)}1`)).toBe(`0.${'0'.repeat(400)}1`);
    expect(valueReader(NUMERIC)('NaN')).toBe('NaN');
    expect(valueReader(OID.float8)('0.1')).toBe(0.1);
    expect(valueReader(OID.float4)('3.4028235e+38')).toBe(3.4028235e38);
    for (const name of ['NaN', 'Infinity', '-Infinity']) expect(valueReader(OID.float8)(name)).toBe(name);
  });

  it('sends a numeric as a CSV export of it is sent', () => {
    for (const text of ['1.50', '-0.5', '42', '123456789012345678901234', '0.1', '0.00001']) {
      expect(valueReader(NUMERIC)(text)).toBe(requestValue(text, true));
    }
  });

  it('reads booleans, dates, timestamps, json, bytea and text as the Parquet reader gives them', () => {
    expect(valueReader(OID.bool)('t')).toBe(true);
    expect(valueReader(OID.bool)('f')).toBe(false);
    expect(valueReader(OID.date)('2024-02-29')).toBe('2024-02-29');
    expect(valueReader(TIMESTAMP)('2024-02-29 10:11:12')).toBe('2024-02-29T10:11:12');
    expect(valueReader(TIMESTAMP)('2024-02-29 10:11:12.000123')).toBe('2024-02-29T10:11:12.000123');
    expect(valueReader(TIMESTAMPTZ)('2024-02-29 08:11:12.5+00')).toBe('2024-02-29T08:11:12.5Z');
    // What ISO 8601 has no form for stays as the server writes it.
    expect(valueReader(TIMESTAMP)('infinity')).toBe('infinity');
    expect(valueReader(TIMESTAMP)('0044-03-15 12:00:00 BC')).toBe('0044-03-15 12:00:00 BC');
    expect(valueReader(JSONB)('{"a": [1, null]}')).toEqual({ a: [1, null] });
    expect(valueReader(OID.json)('"x"')).toBe('x');
    expect(valueReader(OID.bytea)('\\x0102ff')).toBe(Buffer.from([1, 2, 255]).toString('base64'));
    expect(valueReader(OID.text)('00123')).toBe('00123');
    expect(valueReader(UUID)('0e6b8c4e-8c33-4d4c-9d5c-2f3f2a3b4c5d')).toBe('0e6b8c4e-8c33-4d4c-9d5c-2f3f2a3b4c5d');
    expect(valueReader(INTERVAL)('1 day 02:00:00')).toBe('1 day 02:00:00');
  });

  it('names the value type each column is kept as', () => {
    expect([OID.bool, OID.int2, OID.int4, OID.int8, OID.float4, OID.float8, NUMERIC].map(columnValueType)).toEqual([
      'boolean',
      'int32',
      'int32',
      'int64',
      'float',
      'double',
      'double',
    ]);
    expect([OID.date, TIMESTAMP, TIMESTAMPTZ, OID.json, JSONB, OID.bytea].map(columnValueType)).toEqual([
      'date',
      'timestamp',
      'timestamp',
      'json',
      'json',
      'binary',
    ]);
    expect([OID.text, OID.varchar, UUID, INTERVAL].map(columnValueType)).toEqual(['string', 'string', 'string', 'string']);
  });
});

describe('queries a run may read', () => {
  it('takes one statement that reads, and says what else is refused', () => {
    for (const query of ['SELECT 1', '  with x AS (SELECT 1) SELECT * FROM x', '-- rows\n(SELECT 1)', '/* all */ VALUES (1)', 'TABLE t']) {
      expect(queryProblem(query)).toBeUndefined();
    }
    expect(queryProblem('DELETE FROM t')).toBe('must be one SELECT statement that only reads; it starts with DELETE');
    expect(queryProblem('  ')).toBe('must be one SELECT statement');
    expect(queryProblem(`SELECT '${'x'.repeat(64 * 1024)}'`)).toMatch(/^must take at most 64 KiB, not 65545 bytes$/);
  });
});
