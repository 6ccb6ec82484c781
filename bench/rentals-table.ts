/**
 * The bench's rentals rows as a PostgreSQL table: an integer primary key `id`, the rentals columns
 * (integer, numeric and text, with NULLs where the CSV has empty fields, and quoted text with
 * commas, quotes, line breaks and non-ASCII), a double, a boolean (NULL one row in three) and a
 * date. Shared by the postgres-clients and tables sections.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { rowLines } from './inputs.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../src/simulator/sample-data.js';

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/** The table's columns, as CREATE TABLE takes them. */
export const TABLE_COLUMNS = `id integer PRIMARY KEY, listing_id text NOT NULL, number_of_rooms integer, number_of_bathrooms integer, sqft integer,
  location text, days_on_market integer, initial_price numeric(12, 2), neighborhood text, notes text, rating double precision,
  furnished boolean, listed_on date`;
const HEADER = ['id', ...RENTAL_COLUMNS, 'rating', 'furnished', 'listed_on'];

/** The i-th row of the table as CSV: rentalRow's fields (empty ones load as NULL) and three more. */
function tableLine(i: number): string {
  const listed = new Date(Date.UTC(2020, 0, 1) + (i % 2000) * 86_400_000).toISOString().slice(0, 10);
  return csvLine([String(i), ...rentalRow(i), String(((i * 7919) % 5000) / 1000), ['t', 'f', ''][i % 3], listed]);
}

/**
 * Writes `rows` rows as CSV to `csv` (kept for the caller), makes `table` of them with COPY and
 * VACUUM ANALYZEs it: the visibility map lets SELECT id ORDER BY id be an index-only scan, as on
 * a settled table.
 */
export async function loadRentalsTable(client: pg.Client, table: string, rows: number, csv: string): Promise<void> {
  await pipeline(rowLines(rows, tableLine, csvLine(HEADER)), createWriteStream(csv));
  await client.query(`CREATE TABLE ${table} (${TABLE_COLUMNS})`);
  await pipeline(createReadStream(csv), client.query(copyStreams.from(`COPY ${table} FROM STDIN (FORMAT csv, HEADER true)`)));
  await client.query(`VACUUM ANALYZE ${table}`);
}

/** A connected client of DATABASE_URL, or undefined when no server answers there. */
export async function connectBenchDatabase(): Promise<pg.Client | undefined> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return client;
  } catch {
    await client.end().catch(() => undefined);
    return undefined;
  }
}

/** The server's version, e.g. `15.20 (Debian 15.20-0+deb12u1)`. */
export async function serverVersion(client: pg.Client): Promise<string> {
  return (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v;
}
