import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { MindsdbConnection } from './mindsdb-server.js';
import { sqlRows } from './mindsdb-server.js';

/**
 * The server's own batch prediction of a CSV, through its SQL interface rather than the predict
 * API the tool uses: the CSV is uploaded as a file and joined with the model
 * (`SELECT t.<key>, m.* FROM files.<f> AS t JOIN mindsdb.<model> AS m`). `model` may name a
 * version (`home_rentals_model.1`), which the join answers with; without one it answers with the
 * active version. Answers the prediction members of each row by the row's `key` column (which must
 * be unique), with lower-cased names.
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

/** What the suite's home-rentals models answer per row: the value, its confidence and its interval. */
export const RENTAL_PRICE_MEMBERS = ['rental_price', 'rental_price_confidence', 'rental_price_min', 'rental_price_max'] as const;

/**
 * Where written predictions differ from the server's SQL answers (see sqlPredictions): a line for
 * each row whose `members` are not those of the SQL answer of its `key`, or which SQL did not
 * answer; empty when every row agrees. Where the server answered a number, the output's value is
 * read as one (a CSV holds text); anything else is compared as it is (a class). One list rather
 * than an assertion per row, so that 100,000 rows are checked at once and a failure shows the
 * first rows that differ.
 */
export function sqlDisagreements(
  rows: readonly Record<string, unknown>[],
  truth: ReadonlyMap<string, Record<string, unknown>>,
  key: string,
  members: readonly string[] = RENTAL_PRICE_MEMBERS,
): string[] {
  const asTruth = (mine: unknown, theirs: unknown) => (typeof theirs === 'number' && typeof mine === 'string' && mine !== '' ? Number(mine) : mine);
  const lines: string[] = [];
  for (const row of rows) {
    const answer = truth.get(String(row[key]));
    const want = answer && members.map((m) => answer[m]);
    const got = members.map((m, i) => asTruth(row[m], want?.[i]));
    if (!want || got.some((v, i) => v !== want[i]))
      lines.push(`${String(row[key])}: wrote ${JSON.stringify(got)}, SQL answers ${JSON.stringify(want ?? 'nothing')}`);
  }
  return lines.length <= 20 ? lines : [...lines.slice(0, 20), `... and ${lines.length - 20} more rows`];
}

/**
 * Expects the output rows to be the truth's rows, each once, and each to carry the server's own
 * SQL prediction for its `key`, member for member (see sqlDisagreements).
 */
export function expectSqlPredictions(
  rows: readonly Record<string, unknown>[],
  truth: ReadonlyMap<string, Record<string, unknown>>,
  key: string,
  members: readonly string[] = RENTAL_PRICE_MEMBERS,
): void {
  const keys = rows.map((r) => String(r[key]));
  expect(new Set(keys).size, 'output rows with the same key').toBe(keys.length);
  expect(keys.toSorted()).toEqual([...truth.keys()].toSorted());
  expect(sqlDisagreements(rows, truth, key, members)).toEqual([]);
}
