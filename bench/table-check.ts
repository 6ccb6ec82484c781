/**
 * Checks of an out-table against a CSV run's predictions.csv: the rows it holds per key, and every
 * value of every row, streamed (1M rows do not fit a comparison in memory twice).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import Papa from 'papaparse';
import type pg from 'pg';
import copyStreams from 'pg-copy-streams';

/** Rows of `table`, and how many distinct values of `key` they hold: both the input's row count when each row landed once. */
export async function keyCounts(client: pg.Client, table: string, key: string): Promise<{ rows: number; keys: number }> {
  const r = await client.query<{ rows: string; keys: string }>(`SELECT count(*) AS rows, count(DISTINCT ${key}) AS keys FROM ${table}`);
  return { rows: Number(r.rows[0].rows), keys: Number(r.rows[0].keys) };
}

/** Writes `columns` of `table` ordered by `key` as CSV with a header (the server's COPY TO) to `path`. */
export async function exportTable(client: pg.Client, table: string, columns: readonly string[], key: string, path: string): Promise<void> {
  const list = columns.map((c) => `"${c.replace(/"/g, '""')}"`).join(', ');
  await pipeline(client.query(copyStreams.to(`COPY (SELECT ${list} FROM ${table} ORDER BY ${key}) TO STDOUT (FORMAT csv, HEADER)`)), createWriteStream(path));
}

/** The header of a CSV file (its first record). */
export async function csvHeader(path: string): Promise<string[]> {
  for await (const record of records(path)) return record;
  throw new Error(`${path} is empty`);
}

/** What compareCsv found: records compared, those that differ, and the first difference. */
export interface CsvComparison {
  rows: number;
  differing: number;
  first?: string;
}

/**
 * Compares two CSV files record by record and field by field, as values: the same text, or the
 * same number (PostgreSQL writes `1e-05` where JavaScript writes `0.00001`), or the same boolean
 * (`t` and `true`); an empty field is NULL in the server's CSV and null in predictions.csv.
 */
export async function compareCsv(expectedPath: string, actualPath: string): Promise<CsvComparison> {
  const expected = records(expectedPath)[Symbol.asyncIterator]();
  const actual = records(actualPath)[Symbol.asyncIterator]();
  const result: CsvComparison = { rows: -1, differing: 0 }; // the header is record 0
  for (;;) {
    const [e, a] = await Promise.all([expected.next(), actual.next()]);
    if (e.done || a.done) {
      if (!e.done || !a.done) note(result, `${e.done ? actualPath : expectedPath} has records past ${result.rows} rows`);
      return result;
    }
    result.rows++;
    const fields = Math.max(e.value.length, a.value.length);
    for (let i = 0; i < fields; i++) {
      if (!sameValue(e.value[i], a.value[i])) {
        note(result, `row ${result.rows}, field ${i + 1}: ${JSON.stringify(e.value[i])} against ${JSON.stringify(a.value[i])}`);
        break;
      }
    }
  }
}

function note(result: CsvComparison, difference: string): void {
  result.differing++;
  result.first ??= difference;
}

const BOOLEANS: Record<string, string> = { t: 'true', f: 'false', true: 'true', false: 'false' };

function sameValue(expected: string | undefined, actual: string | undefined): boolean {
  if (expected === actual) return true;
  if (expected === undefined || actual === undefined || expected === '' || actual === '') return false;
  const [x, y] = [Number(expected), Number(actual)];
  if (!Number.isNaN(x) && !Number.isNaN(y)) return x === y;
  return BOOLEANS[expected] !== undefined && BOOLEANS[expected] === BOOLEANS[actual];
}

function records(path: string): AsyncIterable<string[]> {
  return createReadStream(path).pipe(Papa.parse(Papa.NODE_STREAM_INPUT, {})) as AsyncIterable<string[]>;
}
