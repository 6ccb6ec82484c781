import { randomBytes } from 'node:crypto';
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
