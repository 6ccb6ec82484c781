import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { text } from 'node:stream/consumers';
import { RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { DATABASE_URL, type PrivateSchema } from './postgres.js';

/** The rentals table's columns: a key, then the sample rentals' columns, each typed as a table would have it. */
const COLUMNS = [
  ['id', 'int4 PRIMARY KEY'],
  ['listing_id', 'text'],
  ['number_of_rooms', 'int4'],
  ['number_of_bathrooms', 'int4'],
  ['sqft', 'int4'],
  ['location', 'text'],
  ['days_on_market', 'int4'],
  ['initial_price', 'int4'],
  ['neighborhood', 'text'],
  ['notes', 'text'],
] as const;

/**
 * A table `<schema>.<name>` of `rows` sample rentals (see rentalRow), keyed `id` = `key(i)`: the
 * rows the CSV tests score, with NULL where a CSV file has an empty field (a CSV reader sends
 * both as null).
 */
export async function rentalsTable(s: PrivateSchema, name: string, rows: number, key: (i: number) => number = (i) => i + 1): Promise<string> {
  const table = `${s.name}.${name}`;
  await s.sql(`CREATE TABLE ${table} (${COLUMNS.map(([c, t]) => `${c} ${t}`).join(', ')})`);
  const values: (number | string | null)[][] = COLUMNS.map(() => []);
  for (let i = 0; i < rows; i++) {
    values[0].push(key(i));
    rentalRow(i).forEach((field, c) => values[c + 1].push(field === '' ? null : field));
  }
  const types = COLUMNS.map(([, t]) => `${t.split(' ')[0]}[]`);
  await s.sql(`INSERT INTO ${table} SELECT * FROM unnest(${types.map((t, i) => `$${i + 1}::${t}`).join(', ')})`, values);
  if (RENTAL_COLUMNS.length !== COLUMNS.length - 1) throw new Error('the sample rentals changed their columns');
  return table;
}

/** The rows of `query` as CSV with a header, as `\copy (query) TO file CSV HEADER` writes them (the server's COPY). */
export async function exportCsv(query: string): Promise<string> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    return await text(client.query(copyTo(`COPY (${query}) TO STDOUT WITH (FORMAT csv, HEADER)`)));
  } finally {
    await client.end();
  }
}
