import { describe, expect, it } from 'vitest';
import {
  connectDatabase,
  type DatabaseConnection,
  describeColumns,
  parseDatabaseUrl,
  parseTableName,
  primaryKey,
  readKeyRange,
  type RowSource,
  scanKeys,
  valueReader,
} from '../../src/database/index.js';
import { BatchScorerError } from '../../src/errors.js';
import { DATABASE_URL, privateSchema } from '../helpers/postgres.js';

const READ = { timeoutMs: 10_000 };

async function withConnection<T>(work: (db: DatabaseConnection) => Promise<T>): Promise<T> {
  const db = await connectDatabase(parseDatabaseUrl(DATABASE_URL));
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

async function all<T>(items: AsyncIterable<T[]>): Promise<T[]> {
  const out: T[] = [];
  for await (const batch of items) out.push(...batch);
  return out;
}

async function* rowsOf(reading: AsyncIterable<{ rows: (string | null)[][] }>): AsyncGenerator<(string | null)[][]> {
  for await (const { rows } of reading) yield rows;
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err as BatchScorerError,
  );

describe('reading rows from the real PostgreSQL', () => {
  it('describes a table, finds its key, scans its keys in order and reads a key range as typed values', async () => {
    const s = await privateSchema();
    await s.sql(`CREATE TABLE ${s.name}.rentals (id int8 PRIMARY KEY, sqft numeric(8,2), location text, listed date, seen timestamptz, ok boolean)`);
    await s.sql(`INSERT INTO ${s.name}.rentals SELECT g, g * 10.5, CASE WHEN g % 3 = 0 THEN NULL ELSE 'l' || g END, DATE '2024-01-01' + g,
      TIMESTAMPTZ '2024-01-01 00:00:00+02' + g * INTERVAL '1 hour', g % 2 = 0 FROM generate_series(1, 2500) g`);
    const source: RowSource = { table: parseTableName(`${s.name}.rentals`, '--table') };
    await withConnection(async (db) => {
      const columns = await describeColumns(db, source, READ);
      expect(columns.map((c) => [c.name, c.type, c.valueType])).toEqual([
        ['id', 'bigint', 'int64'],
        ['sqft', 'numeric(8,2)', 'double'],
        ['location', 'text', 'string'],
        ['listed', 'date', 'date'],
        ['seen', 'timestamp with time zone', 'timestamp'],
        ['ok', 'boolean', 'boolean'],
      ]);
      expect(await primaryKey(db, source.table, READ)).toEqual(['id']);

      const keys = await all(scanKeys(db, source, 'id', READ));
      expect(keys).toHaveLength(2500);
      expect(keys.slice(0, 3)).toEqual([
        { key: '1', repeated: false },
        { key: '2', repeated: false },
        { key: '3', repeated: false },
      ]);
      expect((await all(scanKeys(db, source, 'id', { ...READ, limit: 4 }))).map((k) => k.key)).toEqual(['1', '2', '3', '4']);

      const read: unknown[][] = [];
      let batches = 0;
      for await (const { fields, rows } of readKeyRange(db, source, 'id', { from: '998', to: '2001' }, READ)) {
        batches++;
        for (const row of rows) read.push(row.map((text, i) => (text === null ? null : valueReader(fields[i].typeOid)(text))));
      }
      // A cursor's batches, not the whole range at once.
      expect(batches).toBe(2);
      expect(read).toHaveLength(1003);
      expect(read[0]).toEqual([998, 10479, 'l998', '2026-09-25', '2024-02-11T12:00:00Z', true]);
      expect(read[1][2]).toBeNull();
      expect(read.at(-1)![0]).toBe(2000);
      const last = await all(rowsOf(readKeyRange(db, source, 'id', { from: '2500', to: null }, READ)));
      expect(last).toEqual([['2500', '26250.00', 'l2500', '2030-11-05', '2024-04-14 02:00:00+00', 't']]);
    });
  });

  it('says which keys repeat and which are NULL, as the server compares them', async () => {
    const source: RowSource = { query: 'SELECT * FROM (VALUES (1.0), (1.00), (2), (NULL)) AS v(k);' };
    await withConnection(async (db) => {
      expect(await all(scanKeys(db, source, 'k', READ))).toEqual([
        { key: '1.0', repeated: false },
        { key: '1.00', repeated: true },
        { key: '2', repeated: false },
        { key: null, repeated: false },
      ]);
    });
  });

  it('refuses a query that writes or holds more than one statement, and the table is untouched', async () => {
    const s = await privateSchema();
    await s.sql(`CREATE TABLE ${s.name}.t (id int PRIMARY KEY); INSERT INTO ${s.name}.t VALUES (1), (2); CREATE SEQUENCE ${s.name}.n`);
    await withConnection(async (db) => {
      const twice = await failure(describeColumns(db, { query: `SELECT * FROM ${s.name}.t; DROP TABLE ${s.name}.t` }, READ));
      expect(twice?.code).toBe('E_USAGE');
      expect(twice?.message).toMatch(
        /^--query must be one statement: query 'SELECT \* FROM bs_test_\w+\.t; DROP TABLE bs_test_\w+\.t' has a ';' before its end$/,
      );

      const writes = await failure(all(rowsOf(readKeyRange(db, { query: `SELECT nextval('${s.name}.n') AS id` }, 'id', { from: null, to: null }, READ))));
      expect(writes?.code).toBe('E_USAGE');
      expect(writes?.message).toMatch(/^--query must only read: .*cannot execute nextval\(\) in a read-only transaction \(SQLSTATE 25006\)$/);

      const cte = await failure(describeColumns(db, { query: `WITH d AS (DELETE FROM ${s.name}.t RETURNING id) SELECT * FROM d` }, READ));
      expect(cte?.code).toBe('E_DATABASE_REFUSED');
      expect(cte?.message).toMatch(/data-modifying statement must be at the top level/);
    });
    expect(await s.sql(`SELECT count(*)::int AS n FROM ${s.name}.t`)).toEqual([{ n: 2 }]);
    expect(await s.sql(`SELECT last_value::int AS v, is_called FROM ${s.name}.n`)).toEqual([{ v: 1, is_called: false }]);
  });

  it('names two columns of one name, and a table that does not exist', async () => {
    await withConnection(async (db) => {
      const twice = await failure(describeColumns(db, { query: 'SELECT 1 AS a, 2 AS a' }, READ));
      expect(twice?.message).toBe("query 'SELECT 1 AS a, 2 AS a' has two columns named a: name each column once (AS another_name)");
      const missing = await failure(describeColumns(db, { table: parseTableName('public.no_such_table_here', '--table') }, READ));
      expect(missing?.code).toBe('E_DATABASE_REFUSED');
      expect(missing?.message).toMatch(/^reading table public\.no_such_table_here: relation "public\.no_such_table_here" does not exist \(SQLSTATE 42P01\)$/);
    });
  });

  it('bounds each fetch by the statement timeout, not the whole read: rows may wait for the model longer', async () => {
    const timeoutMs = 300;
    await withConnection(async (db) => {
      const reading = readKeyRange(db, { query: 'SELECT g FROM generate_series(1, 2500) g' }, 'g', { from: null, to: null }, { timeoutMs });
      let rows = 0;
      for await (const batch of reading) {
        rows += batch.rows.length;
        // The consumer holds the batch past the timeout, as a segment waiting on a slow model does.
        await new Promise((resolve) => setTimeout(resolve, timeoutMs * 2));
      }
      expect(rows).toBe(2500);
      // A fetch that itself runs past the timeout still fails.
      const slow = readKeyRange(db, { query: 'SELECT g, pg_sleep(0.2) FROM generate_series(1, 5) g' }, 'g', { from: null, to: null }, { timeoutMs });
      const err = await failure(rowsOf(slow).next());
      expect(err?.code).toBe('E_DATABASE');
      expect(err?.message).toMatch(/statement timeout \(SQLSTATE 57014\)$/);
    });
  });

  it('stops a read when its signal is aborted', async () => {
    const stop = new AbortController();
    const db = await connectDatabase(parseDatabaseUrl(DATABASE_URL), { signal: stop.signal });
    try {
      const reading = readKeyRange(
        db,
        { query: 'SELECT g FROM generate_series(1, 100000) g' },
        'g',
        { from: null, to: null },
        { ...READ, signal: stop.signal },
      );
      const first = await reading.next();
      expect(first.done).toBe(false);
      stop.abort();
      const err = await failure(reading.next());
      expect(err?.code).toBe('E_ABORTED');
    } finally {
      await db.end();
    }
  });
});
