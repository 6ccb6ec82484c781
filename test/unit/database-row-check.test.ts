import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { MAX_ROW_DEPTH } from '../../src/formats/row-parser.js';
import { correctedDatabaseRow, type DatabaseRowShape } from '../../src/scoring/database-row-check.js';

/** A run over a table of each value type, keyed by `id`. */
const shape: DatabaseRowShape = {
  columns: ['id', 'flag', 'small', 'big', 'ratio', 'amount', 'name', 'day', 'at', 'doc', 'blob'],
  types: {
    id: 'int32',
    flag: 'boolean',
    small: 'int32',
    big: 'int64',
    ratio: 'float',
    amount: 'double',
    name: 'string',
    day: 'date',
    at: 'timestamp',
    doc: 'json',
    blob: 'binary',
  },
  key: 'id',
};
const row = {
  id: 7,
  flag: true,
  small: -3,
  big: '9007199254740993',
  ratio: 'NaN',
  amount: '1e-400',
  name: 'x',
  day: '2026-01-31',
  at: '2026-01-31T10:00:00Z',
  doc: { a: [1, { b: null }] },
  blob: 'AAE=',
};
const place = { index: 6, line: 7, where: '--rows f.jsonl: line 2 (row 7)', key: '7' };
const refusal = (input: unknown, at = place) => {
  try {
    correctedDatabaseRow(input, at, shape);
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error('not refused');
};

describe('a corrected row of a run over a database', () => {
  it('is sent as its values, each of its column type or null, at its place', () => {
    expect(correctedDatabaseRow(row, place, shape)).toEqual({ index: 6, line: 7, record: row });
    const nulls = { ...Object.fromEntries(shape.columns.map((c) => [c, null])), id: 7 };
    expect(correctedDatabaseRow(nulls, place, shape)).toEqual({ index: 6, line: 7, record: nulls });
    // Numbers where a text could stand, and any JSON for json.
    const numbers = { ...row, big: 12, ratio: 0.5, amount: 2, doc: 'text' };
    expect(correctedDatabaseRow(numbers, place, shape).record).toEqual(numbers);
    // A malformed row's key was never read: it is not held to one.
    expect(correctedDatabaseRow({ ...row, id: 8 }, { ...place, key: undefined }, shape).record).toMatchObject({ id: 8 });
  });

  it('refuses another shape, naming the line and column', () => {
    expect(refusal('7,true')).toBe(`--rows f.jsonl: line 2 (row 7): "input" must be the row's values by column, as errors.jsonl wrote them`);
    expect(refusal([row])).toContain('"input" must be the row\'s values by column');
    expect(refusal({ ...row, extra: 1, more: 2 })).toBe(
      `--rows f.jsonl: line 2 (row 7): "input" has columns "extra", "more" the run's rows do not (${shape.columns.join(', ')}): change the values, not the columns`,
    );
    const { name: _name, day: _day, ...less } = row;
    expect(refusal(less)).toBe('--rows f.jsonl: line 2 (row 7): "input" has no value for "name", "day": give every column (null for NULL)');
  });

  it('refuses a value of another type than its column was read as, and another key', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ flag: 'true' }, 'column "flag" holds "true", where the run read true or false (or null)'],
      [{ small: 1.5 }, 'column "small" holds 1.5, where the run read an integer (or null)'],
      [{ big: '12.5' }, 'column "big" holds "12.5", where the run read an integer (its digits as text past 2^53) (or null)'],
      [{ ratio: 'many' }, 'column "ratio" holds "many", where the run read a number ("NaN", "Infinity" as text) (or null)'],
      [{ amount: true }, 'column "amount" holds true, where the run read a number'],
      [{ name: 5 }, 'column "name" holds 5, where the run read text (or null)'],
      [{ day: { y: 2026 } }, 'column "day" holds {"y":2026}, where the run read a date as text'],
      [{ blob: [0, 1] }, 'column "blob" holds [0,1], where the run read its bytes as base64 text'],
      [{ id: 8 }, `column "id" is the run's key (--segment-by): its value 7 places the row among the others; keep it, and change the other values`],
    ];
    for (const [change, message] of cases) expect(refusal({ ...row, ...change })).toContain(`--rows f.jsonl: line 2 (row 7): ${message}`);
  });

  it('quarantines a row nested too deep by a json value, as a run reading it would', () => {
    let doc: unknown = 1;
    for (let i = 0; i < MAX_ROW_DEPTH; i++) doc = [doc];
    const sent = correctedDatabaseRow({ ...row, doc }, place, shape);
    expect(sent).toMatchObject({ index: 6, line: 7, problem: expect.stringContaining(`nested more than ${MAX_ROW_DEPTH} levels deep`) as string });
    expect(sent.record).toBeUndefined();
  });
});
