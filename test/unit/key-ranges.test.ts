import { describe, expect, it } from 'vitest';
import { checkInputOptions, parseRunInput } from '../../src/config/run-input.js';
import { parseRunOptions } from '../../src/config/run-options.js';
import type { ScannedKey } from '../../src/database/index.js';
import { BatchScorerError } from '../../src/errors.js';
import { keyRanges, type KeyRangeOptions } from '../../src/scoring/database-plan.js';
import { rejection, thrown } from '../helpers/rejection.js';

/** The ordered scan of these keys, in batches of `batch`, each marked repeated where it equals the one before. */
function scan(keys: readonly (string | null)[], batch = 2): ScannedKey[][] {
  const batches: ScannedKey[][] = [];
  for (let at = 0; at < keys.length; at += batch) {
    batches.push(keys.slice(at, at + batch).map((key, i) => ({ key, repeated: at + i > 0 && key !== null && key === keys[at + i - 1] })));
  }
  return batches;
}

const OPTIONS: KeyRangeOptions = { segmentRows: 3, maxSegments: 100, key: 'id', source: 'table public.t', name: 'postgresql://h:5432/db table public.t' };
const ranges = (keys: readonly (string | null)[], options: Partial<KeyRangeOptions> = {}) => keyRanges(scan(keys), { ...OPTIONS, ...options });
const bounds = async (keys: readonly (string | null)[], options: Partial<KeyRangeOptions> = {}) =>
  (await ranges(keys, options)).map(({ from, to, rows }) => [from, to, rows]);

describe('key ranges cut from the ordered scan of the key', () => {
  it("cuts every segmentRows rows, each range ending at the next one's first key, open at both ends", async () => {
    const keys = ['10', '20', '30', '40', '50', '60', '70'];
    expect(await bounds(keys)).toEqual([
      [null, '40', 3],
      ['40', '70', 3],
      ['70', null, 1],
    ]);
    const cut = await ranges(keys);
    expect(cut.map((s) => [s.index, s.firstRow, s.firstLine])).toEqual([
      [0, 0, 1],
      [1, 3, 4],
      [2, 6, 7],
    ]);
    expect(await bounds(keys.slice(0, 6))).toEqual([
      [null, '40', 3],
      ['40', null, 3],
    ]);
    expect(await ranges([])).toEqual([]);
  });

  it('keeps the first --limit rows, closing the last range at the key after them', async () => {
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    expect(await bounds(keys, { limit: 4 })).toEqual([
      [null, 'd', 3],
      ['d', 'e', 1],
    ]);
    expect(await bounds(keys, { limit: 3 })).toEqual([[null, 'd', 3]]);
    // A limit past the rows reads them all, the last range open.
    expect(await bounds(keys.slice(0, 2), { limit: 5 })).toEqual([[null, null, 2]]);
  });

  it('refuses a repeated or NULL key, naming the column and the value, and more ranges than MAX_SEGMENTS', async () => {
    const repeated = await rejection(ranges(['1', '2', '2', '3']), BatchScorerError);
    expect(repeated.code).toBe('E_INPUT');
    expect(repeated.message).toBe(
      "--segment-by id: table public.t has more than one row whose id is '2'; segments are ranges of a unique key: choose a unique column",
    );
    const nulls = await rejection(ranges(['1', null]), BatchScorerError);
    expect(nulls.message).toMatch(/^--segment-by id: table public\.t has rows whose id is NULL; segments are ranges of a key that is never NULL/);
    const long = await rejection(ranges(['1', 'x'.repeat(5000), 'x'.repeat(5000)]), BatchScorerError);
    expect(long.message.length).toBeLessThan(1000);
    const many = await rejection(ranges(['1', '2', '3', '4', '5', '6', '7'], { segmentRows: 2, maxSegments: 3 }), BatchScorerError);
    expect(many.code).toBe('E_LIMIT');
    expect(many.message).toMatch(/^postgresql:\/\/h:5432\/db table public\.t: its first 7 rows already make more than 3 segments of --segment-rows 2/);
  });
});

describe('the options of a database input', () => {
  it('bound the query and check the table and key names, naming the flags', () => {
    const flags = (options: Record<string, unknown>) => thrown(() => parseRunOptions(options, 'score', 'flags'), BatchScorerError).message;
    expect(flags({ query: 'UPDATE t SET x = 1' })).toBe('score: --query: must be one SELECT statement that only reads; it starts with UPDATE');
    expect(flags({ query: `SELECT '${'x'.repeat(70_000)}'` })).toBe('score: --query: must take at most 64 KiB, not 70009 bytes');
    expect(flags({ table: 'a.b.c' })).toMatch(/^score: --table: must be a table name: table, schema\.table or "Quoted Name"/);
    expect(flags({ segmentBy: 'k'.repeat(64) })).toBe('score: --segment-by: must be a column name of at most 63 bytes, without NUL');
    expect(parseRunOptions({ table: '"Sales".q1', segmentBy: 'Id' })).toMatchObject({ table: '"Sales".q1', segmentBy: 'Id' });
  });

  it('fit the input: one of table and query for a database, none for files', () => {
    const database = parseRunInput('postgres://analyst@db:5432/sales');
    const files = parseRunInput('s3://bucket/rentals.csv');
    expect(database).toEqual({ kind: 'database', database: { host: 'db', port: 5432, database: 'sales', user: 'analyst' } });
    checkInputOptions(database, { table: 'public.rentals' });
    checkInputOptions(database, { query: 'SELECT 1 AS id', segmentBy: 'id' });
    checkInputOptions(files, {});
    const refusal = (input: typeof files, options: Record<string, string>, naming: 'flags' | 'fields' = 'flags') =>
      thrown(() => checkInputOptions(input, options, naming), BatchScorerError).message;
    expect(refusal(database, {})).toBe("postgresql://analyst@db:5432/sales is a database: name its rows with --table schema.table or --query 'SELECT ...'");
    expect(refusal(database, {}, 'fields')).toBe(
      "postgresql://analyst@db:5432/sales is a database: name its rows with table schema.table or query 'SELECT ...'",
    );
    expect(refusal(database, { table: 't', query: 'SELECT 1' })).toBe('--table and --query: give one of them, not both');
    expect(refusal(database, { query: 'SELECT 1' }, 'fields')).toMatch(/^query needs segmentBy <column>/);
    expect(refusal(files, { table: 't', segmentBy: 'id' })).toBe(
      '--table, --segment-by: for a database input (postgresql://user@host:5432/db); s3://bucket/rentals.csv is a file location',
    );
  });
});
