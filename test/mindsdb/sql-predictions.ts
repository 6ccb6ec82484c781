import { randomBytes } from 'node:crypto';
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
 * each row whose `members`, read as numbers, are not those of the SQL answer of its `key`, or
 * which SQL did not answer; empty when every row agrees. One list rather than an assertion per
 * row, so that 100,000 rows are checked at once and a failure shows the first rows that differ.
 */
export function sqlDisagreements(
  rows: readonly Record<string, unknown>[],
  truth: ReadonlyMap<string, Record<string, unknown>>,
  key: string,
  members: readonly string[] = RENTAL_PRICE_MEMBERS,
): string[] {
  const asNumber = (v: unknown) => (v === null || v === undefined || v === '' ? null : Number(v));
  const lines: string[] = [];
  for (const row of rows) {
    const answer = truth.get(String(row[key]));
    const got = members.map((m) => asNumber(row[m]));
    const want = answer && members.map((m) => asNumber(answer[m]));
    if (!want || got.some((v, i) => v !== want[i]))
      lines.push(`${String(row[key])}: wrote ${JSON.stringify(got)}, SQL answers ${JSON.stringify(want ?? 'nothing')}`);
  }
  return lines.length <= 20 ? lines : [...lines.slice(0, 20), `... and ${lines.length - 20} more rows`];
}
