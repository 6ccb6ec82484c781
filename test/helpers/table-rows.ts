import { expect } from 'vitest';
import type { PrivateSchema } from './postgres.js';
import { parseCsv } from './scoring.js';

/**
 * Holds a table's rows, ordered by row_number, to predictions.csv's: the same rows, and in each
 * column the same value, NULL where the file has an empty field. Numbers are compared as the
 * numbers the file's text means (PostgreSQL writes a double back in its shortest form, as String
 * does), JSON values (jsonb) as the values the file's JSON text means.
 */
export async function expectTableMatchesCsv(db: PrivateSchema, table: string, csv: string): Promise<void> {
  const expected = parseCsv(csv);
  const rows = await db.sql(`SELECT * FROM ${table} ORDER BY row_number`);
  expect(rows.length).toBe(expected.length);
  expect(Object.keys(rows[0] ?? {})).toEqual(Object.keys(expected[0] ?? {}));
  rows.forEach((row, i) => {
    for (const [column, text] of Object.entries(expected[i])) {
      const value: unknown = row[column];
      const where = `row ${i + 1}, column ${column}`;
      if (value === null) expect(text, where).toBe('');
      else if (typeof value === 'object') expect(value, where).toEqual(JSON.parse(text));
      else if (typeof value === 'number') expect(value, where).toBe(Number(text));
      else expect(String(value as string | boolean), where).toBe(text);
    }
  });
}

/** The staging tables left in a schema. */
export async function stagingTables(db: PrivateSchema): Promise<string[]> {
  const rows = await db.sql<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'batch_scorer_stage%'`, [
    db.name,
  ]);
  return rows.map((r) => r.name);
}

/** The rows a table holds. */
export async function count(db: PrivateSchema, table: string): Promise<number> {
  return Number((await db.sql<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n);
}
