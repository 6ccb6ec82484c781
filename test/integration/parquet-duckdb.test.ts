import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { createWriteStream } from 'node:fs';
import { mkdtemp, open, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { readParquetLayout, readParquetRows, type RangeRead } from '../../src/formats/parquet-input.js';
import { createParquetOutput, type ParquetOutputColumn } from '../../src/formats/parquet-output.js';
import { rejection } from '../helpers/rejection.js';

const DAY_MILLIS = 86_400_000;

let dir: string;
let instance: DuckDBInstance;
let duckdb: DuckDBConnection;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'parquet-duckdb-'));
  // One thread: DuckDB then writes its row groups in order and the same sizes every time.
  instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  duckdb = await instance.connect();
});

afterAll(async () => {
  duckdb?.closeSync();
  instance?.closeSync();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A RangeRead over a local file that counts the bytes it reads. */
async function fileReader(path: string): Promise<{ read: RangeRead; size: number; bytes: () => number; close: () => Promise<void> }> {
  const handle = await open(path);
  const size = (await stat(path)).size;
  let bytes = 0;
  const read: RangeRead = async (start, end) => {
    bytes += end - start;
    const buffer = Buffer.alloc(end - start);
    const { bytesRead } = await handle.read(buffer, 0, end - start, start);
    return buffer.subarray(0, bytesRead);
  };
  return { read, size, bytes: () => bytes, close: () => handle.close() };
}

async function allRows(read: RangeRead, size: number, name: string, first: number, count: number): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for await (const group of readParquetRows(read, size, name, { first, count })) rows.push(...group);
  return rows;
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  return (await duckdb.runAndReadAll(sql)).getRowObjectsJson();
}

describe('readParquetLayout and readParquetRows over a file DuckDB wrote', () => {
  const ROWS = 60_000;
  const BIG = 9007199254740993n; // 2^53 + 1: not a safe integer
  const TS_BASE = Date.UTC(2020, 0, 1) * 1000; // microseconds
  let path: string;

  /** The row DuckDB writes for i (the SQL below), as readParquetRows must give it. */
  function expectedRow(i: number): Record<string, unknown> {
    const micros = TS_BASE + i * 1_000_001;
    const iso = new Date(Math.floor(micros / 1000)).toISOString().slice(0, -1);
    const extra = String(micros % 1000)
      .padStart(3, '0')
      .replace(/0+$/, '');
    return {
      i32: i % 11 === 0 ? null : i - 25_000,
      i64: i % 13 === 0 ? null : i % 2 === 0 ? i * 1_000_003 : String(BIG + BigInt(i)),
      dbl: i % 17 === 0 ? null : i / 7,
      str: i % 19 === 0 ? null : `row ${i} ü`,
      flag: i % 23 === 0 ? null : i % 3 === 0,
      d: i % 29 === 0 ? null : new Date(Date.UTC(2000, 0, 1) + (i % 10_000) * DAY_MILLIS).toISOString().slice(0, 10),
      // TIMESTAMP is local time: no zone
      ts: i % 31 === 0 ? null : `${iso}${extra}`,
    };
  }

  beforeAll(async () => {
    path = join(dir, 'duckdb.parquet');
    await duckdb.run(`COPY (
      SELECT
        CASE WHEN i % 11 = 0 THEN NULL ELSE (i - 25000)::INTEGER END AS i32,
        CASE WHEN i % 13 = 0 THEN NULL WHEN i % 2 = 0 THEN i * 1000003 ELSE ${BIG} + i END::BIGINT AS i64,
        CASE WHEN i % 17 = 0 THEN NULL ELSE i / 7 END::DOUBLE AS dbl,
        CASE WHEN i % 19 = 0 THEN NULL ELSE 'row ' || i || ' ü' END::VARCHAR AS str,
        CASE WHEN i % 23 = 0 THEN NULL ELSE i % 3 = 0 END::BOOLEAN AS flag,
        CASE WHEN i % 29 = 0 THEN NULL ELSE DATE '2000-01-01' + (i % 10000)::INTEGER END::DATE AS d,
        CASE WHEN i % 31 = 0 THEN NULL ELSE TIMESTAMP '2020-01-01 00:00:00' + to_microseconds(i * 1000001) END::TIMESTAMP AS ts
      FROM range(${ROWS}) t(i) ORDER BY i
    ) TO '${path}' (FORMAT parquet, ROW_GROUP_SIZE 6000)`);
  });

  it('reports the columns, their types and the row groups from the footer alone', async () => {
    const file = await fileReader(path);
    try {
      const layout = await readParquetLayout(file.read, file.size, 'duckdb.parquet');
      expect(layout.columns).toEqual([
        { name: 'i32', type: 'int32' },
        { name: 'i64', type: 'int64' },
        { name: 'dbl', type: 'double' },
        { name: 'str', type: 'string' },
        { name: 'flag', type: 'boolean' },
        { name: 'd', type: 'date' },
        { name: 'ts', type: 'timestamp' },
      ]);
      expect(layout.rowGroups.length).toBeGreaterThan(5);
      expect(layout.rows).toBe(ROWS);
      expect(layout.rowGroups.reduce((sum, group) => sum + group.rows, 0)).toBe(ROWS);
      const duckGroups = await query(`SELECT DISTINCT row_group_id, row_group_num_rows FROM parquet_metadata('${path}') ORDER BY row_group_id`);
      expect(layout.rowGroups.map((group) => group.rows)).toEqual(duckGroups.map((group) => Number(group.row_group_num_rows)));
      // The footer is at most one guess of the file's end, whatever the file's size.
      expect(file.bytes()).toBeLessThanOrEqual(64 * 1024);
      expect(file.bytes()).toBeLessThan(file.size / 10);
    } finally {
      await file.close();
    }
  });

  it('gives every row, group by group, with JSON-safe values of the right types', async () => {
    const file = await fileReader(path);
    try {
      const layout = await readParquetLayout(file.read, file.size, 'duckdb.parquet');
      const rows: Record<string, unknown>[] = [];
      for (let g = 0; g < layout.rowGroups.length; g++) {
        const group = await allRows(file.read, file.size, 'duckdb.parquet', g, 1);
        expect(group).toHaveLength(layout.rowGroups[g].rows);
        rows.push(...group);
      }
      expect(rows).toHaveLength(ROWS);
      for (let i = 0; i < ROWS; i++) {
        if (JSON.stringify(rows[i]) !== JSON.stringify(expectedRow(i))) expect({ i, row: rows[i] }).toEqual({ i, row: expectedRow(i) });
      }
      // Several groups in one call: the same rows, in slices of at most 1,000 that never span two groups.
      const arrays: number[] = [];
      for await (const slice of readParquetRows(file.read, file.size, 'duckdb.parquet', { first: 2, count: 3 })) arrays.push(slice.length);
      const perGroup = layout.rowGroups
        .slice(2, 5)
        .flatMap((group) => [...Array<number>(Math.floor(group.rows / 1000)).fill(1000), ...(group.rows % 1000 ? [group.rows % 1000] : [])]);
      expect(arrays).toEqual(perGroup);
      expect(await allRows(file.read, file.size, 'duckdb.parquet', 2, 3)).toEqual(rows.slice(sumRows(layout.rowGroups, 2), sumRows(layout.rowGroups, 5)));
    } finally {
      await file.close();
    }
  });

  it('reads one row group with far fewer bytes than the file', async () => {
    const file = await fileReader(path);
    try {
      const layout = await readParquetLayout(file.read, file.size, 'duckdb.parquet');
      const afterLayout = file.bytes();
      const middle = Math.floor(layout.rowGroups.length / 2);
      await allRows(file.read, file.size, 'duckdb.parquet', middle, 1);
      const groupBytes = file.bytes() - afterLayout; // the footer again, and the group's column chunks
      const [chunks] = await query(`SELECT sum(total_compressed_size)::BIGINT AS bytes FROM parquet_metadata('${path}') WHERE row_group_id = ${middle}`);
      expect(groupBytes).toBeLessThanOrEqual(64 * 1024 + Number(chunks.bytes) + 1024);
      expect(groupBytes).toBeLessThan(file.size / 4);
    } finally {
      await file.close();
    }
  });

  it('refuses a row group range outside the file', async () => {
    const file = await fileReader(path);
    try {
      await expect(allRows(file.read, file.size, 'duckdb.parquet', 9, 100)).rejects.toThrow(/outside the file's \d+ row groups/);
    } finally {
      await file.close();
    }
  });
});

function sumRows(groups: readonly { rows: number }[], end: number): number {
  return groups.slice(0, end).reduce((sum, group) => sum + group.rows, 0);
}

describe('a file that is not Parquet', () => {
  it('is refused with an InputError naming the file', async () => {
    const path = join(dir, 'rentals.parquet');
    await writeFile(path, 'id,price\n1,2.5\n2,3.5\n'.repeat(100));
    const file = await fileReader(path);
    try {
      const err = await rejection(readParquetLayout(file.read, file.size, 'rentals.parquet'), InputError);
      expect(err.code).toBe('E_INPUT');
      expect(err.message).toContain('rentals.parquet');
      expect(err.message).toMatch(/not a Parquet file/);
      const rowsErr = await rejection(allRows(file.read, file.size, 'rentals.parquet', 0, 1), InputError);
      expect(rowsErr.message).toContain('rentals.parquet');
    } finally {
      await file.close();
    }
  });

  it('is refused when too short to be one', async () => {
    const err = await rejection(
      readParquetLayout(() => Promise.resolve(new Uint8Array(3)), 3, 'tiny.parquet'),
      InputError,
    );
    expect(err.message).toMatch(/tiny\.parquet: not a Parquet file/);
  });
});

describe('a Parquet file with columns this tool cannot read', () => {
  it.each([
    ['a list', `SELECT 1 AS id, [1, 2] AS tags`, '', /column "tags" is a nested column \(LIST\)/],
    ['a struct', `SELECT 1 AS id, {'a': 1} AS point`, '', /column "point" is a nested column/],
    ['a time of day', `SELECT TIME '12:00:00' AS opens`, '', /column "opens" is a time of day/],
    ['a codec hyparquet cannot decode', `SELECT 1 AS id`, ', COMPRESSION zstd', /column "id" is compressed with ZSTD/],
  ])('is refused, naming the column, for %s', async (_what, select, options, message) => {
    const path = join(dir, 'refused.parquet');
    await duckdb.run(`COPY (${select}) TO '${path}' (FORMAT parquet${options})`);
    const file = await fileReader(path);
    try {
      const err = await rejection(readParquetLayout(file.read, file.size, 'refused.parquet'), InputError);
      expect(err.message).toMatch(/^refused\.parquet: /);
      expect(err.message).toMatch(message);
    } finally {
      await file.close();
    }
  });
});

describe('createParquetOutput read back by DuckDB', () => {
  const COLUMNS: ParquetOutputColumn[] = [
    { name: 'id', type: 'int64' },
    { name: 'n', type: 'int32' },
    { name: 'score', type: 'double' },
    { name: 'ratio', type: 'float' },
    { name: 'label', type: 'string' },
    { name: 'ok', type: 'boolean' },
    { name: 'day', type: 'date' },
    { name: 'seen_at', type: 'timestamp' },
    { name: 'extra', type: 'json' },
    { name: 'raw', type: 'binary' },
  ];
  const ROWS = 25_000;

  function row(i: number): unknown[] {
    if (i % 97 === 0) return COLUMNS.map(() => null);
    return [
      i % 5 === 0 ? String(2n ** 60n + BigInt(i)) : i, // int64 beyond 2^53, as a string
      String(i - 12_500), // an integer string from CSV
      i / 3,
      i % 4 === 0 ? '0.25' : 0.5,
      i % 3 === 0 ? i : `label ${i} ✓`, // a number in a string column
      i % 2 === 0,
      `2024-${String((i % 12) + 1).padStart(2, '0')}-15`,
      `2024-03-01T12:00:00.${String(i % 1_000_000).padStart(6, '0')}Z`,
      { i, tags: ['a', i % 2 === 0] },
      Buffer.from([i % 256, (i >> 8) % 256]).toString('base64'),
    ];
  }

  /** The row as DuckDB's JSON gives it back for the SELECT below. */
  function duckRow(i: number): Record<string, unknown> {
    const values = row(i);
    if (values.every((v) => v === null)) return Object.fromEntries(COLUMNS.map((c) => [c.name, null]));
    return {
      id: String(values[0]),
      n: i - 12_500,
      score: i / 3,
      ratio: i % 4 === 0 ? 0.25 : 0.5,
      label: String(values[4]),
      ok: i % 2 === 0,
      day: values[6],
      seen_at: String(Date.UTC(2024, 2, 1, 12) * 1000 + (i % 1_000_000)),
      extra: JSON.stringify({ i, tags: ['a', i % 2 === 0] }),
      raw: values[9],
    };
  }

  it('writes every row and value, in row groups of rowGroupRows, with the declared column types', async () => {
    const path = join(dir, 'out.parquet');
    const output = createParquetOutput(createWriteStream(path), COLUMNS, { rowGroupRows: 10_000 });
    for (let start = 0; start < ROWS; start += 777) {
      await output.writeRows(Array.from({ length: Math.min(777, ROWS - start) }, (_, k) => row(start + k)));
    }
    expect(await output.end()).toEqual({ rows: ROWS });

    const types = await query(`DESCRIBE SELECT * FROM read_parquet('${path}')`);
    expect(Object.fromEntries(types.map((t) => [t.column_name, t.column_type]))).toEqual({
      id: 'BIGINT',
      n: 'INTEGER',
      score: 'DOUBLE',
      ratio: 'FLOAT',
      label: 'VARCHAR',
      ok: 'BOOLEAN',
      day: 'DATE',
      seen_at: 'TIMESTAMP WITH TIME ZONE',
      extra: 'JSON',
      raw: 'BLOB',
    });
    const groups = await query(`SELECT DISTINCT row_group_id, row_group_num_rows FROM parquet_metadata('${path}') ORDER BY row_group_id`);
    expect(groups.map((g) => Number(g.row_group_num_rows))).toEqual([10_000, 10_000, 5_000]);

    const rows = await query(
      `SELECT id, n, score, ratio, label, ok, day, epoch_us(seen_at)::VARCHAR AS seen_at, extra::VARCHAR AS extra, to_base64(raw) AS raw
       FROM read_parquet('${path}')`,
    );
    expect(rows).toHaveLength(ROWS);
    for (let i = 0; i < ROWS; i++) {
      if (JSON.stringify(rows[i]) !== JSON.stringify(duckRow(i))) expect({ i, row: rows[i] }).toEqual({ i, row: duckRow(i) });
    }

    // And this tool's own reader gives the values back as readParquetRows promises.
    const file = await fileReader(path);
    try {
      const layout = await readParquetLayout(file.read, file.size, 'out.parquet');
      expect(layout.columns).toEqual(COLUMNS);
      const [first] = await allRows(file.read, file.size, 'out.parquet', 0, 1);
      expect(first).toEqual({ id: null, n: null, score: null, ratio: null, label: null, ok: null, day: null, seen_at: null, extra: null, raw: null });
      const last = (await allRows(file.read, file.size, 'out.parquet', 2, 1)).at(-1);
      expect(last).toEqual({
        id: 24_999,
        n: 24_999 - 12_500,
        score: 24_999 / 3,
        ratio: 0.5,
        label: '24999', // 24,999 is a multiple of 3: a number, written as its string
        ok: false,
        day: '2024-04-15',
        seen_at: '2024-03-01T12:00:00.024999Z',
        extra: { i: 24_999, tags: ['a', false] },
        raw: Buffer.from([24_999 % 256, (24_999 >> 8) % 256]).toString('base64'),
      });
    } finally {
      await file.close();
    }
  });
});
