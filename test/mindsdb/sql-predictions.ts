import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { MindsdbConnection } from './mindsdb-server.js';
import { sqlRows } from './mindsdb-server.js';

/**
 * The server's own batch prediction of a CSV, through its SQL interface rather than the predict
 * API the tool uses: the CSV is uploaded as a file and joined with the model
 * (`SELECT t.<key>, m.* FROM files.<f> AS t JOIN mindsdb.<model> AS m`). Answers the prediction
 * members of each row by the row's `key` column (which must be unique), with lower-cased names.
 */
export async function sqlPredictions(conn: MindsdbConnection, model: string, csv: string, key: string): Promise<Map<string, Record<string, unknown>>> {
  const file = `contract_${randomBytes(6).toString('hex')}`;
  await conn.uploadFile(file, csv);
  try {
    const answer = await conn.sql(`SELECT t.${key} AS row_key, m.* FROM files.${file} AS t JOIN mindsdb.${model} AS m`);
    const byKey = new Map<string, Record<string, unknown>>();
    for (const row of sqlRows(answer)) {
      const k = String(row.row_key);
      if (byKey.has(k)) throw new Error(`the server's SQL prediction answered row ${k} twice`);
      byKey.set(k, row);
    }
    return byKey;
  } finally {
    await conn.sql(`DROP TABLE files.${file}`).catch(() => undefined);
  }
}

/**
 * Expects the output rows to be the truth's rows, each once, and each to carry the server's own
 * SQL prediction for its `key`, member for member: where the server answered a number, the
 * output's value read as one (a CSV holds text); anything else as it is (a class, in any format).
 */
export function expectSqlPredictions(
  rows: readonly Record<string, unknown>[],
  truth: ReadonlyMap<string, Record<string, unknown>>,
  key: string,
  members: readonly string[],
): void {
  const keys = rows.map((r) => String(r[key]));
  expect(new Set(keys).size, 'output rows with the same key').toBe(keys.length);
  expect(keys.toSorted()).toEqual([...truth.keys()].toSorted());
  const asTruth = (mine: unknown, theirs: unknown) => (typeof theirs === 'number' && typeof mine === 'string' && mine !== '' ? Number(mine) : mine);
  const actual = rows.map((r) => [r[key], ...members.map((m) => asTruth(r[m], truth.get(String(r[key]))?.[m]))]);
  const expected = rows.map((r) => [r[key], ...members.map((m) => truth.get(String(r[key]))?.[m])]);
  expect(actual).toEqual(expected);
}
