import type pg from 'pg';

/**
 * The one file that knows how many rows are read a batch at a time: every read of many rows goes
 * through openRowCursor, a cursor of SQL's own (DECLARE ... NO SCROLL CURSOR, then FETCH n), so
 * that another way (pg-cursor's portal, pg-query-stream, postgres.js) could take its place here alone.
 *
 * Why SQL's cursor and not pg-cursor's portal (an Execute of n rows at a time, the extended
 * protocol's own cursor): the server counts statement_timeout over a portal from its first message
 * to the Sync that pg-cursor sends only when it closes, so a segment whose rows waited for a slow
 * model failed (E_DATABASE) once it had been open 30 minutes, however quick each read. Each FETCH is
 * a statement of its own, bounded alone; the transaction that holds the cursor stays open as long
 * as the reading does. Measured against pg-cursor reading 1,000,000 rows of 13 columns (bench
 * section postgres-clients, medians of 3, 2 cores, Node 24.9.0, PostgreSQL 15): see BENCHMARKS.md.
 */

/** A column of a result, as the server describes it. */
export interface ResultField {
  name: string;
  /** pg_type.oid of its type. */
  typeOid: number;
  /** The type's modifier (a varchar's length, a numeric's precision and scale); -1 when none. */
  typeModifier: number;
}

/** A row as the server's text of each value, in the result's column order; null for NULL. */
export type TextRow = (string | null)[];

/** Rows of one statement, read a batch at a time: only the batch in hand is in memory. */
export interface RowCursor {
  /** The next batch of rows; empty once every row is read. */
  read(): Promise<TextRow[]>;
  /** The result's columns, known once a read has answered. */
  fields(): readonly ResultField[];
  /** Closes the cursor (safe twice, and after an error): the rows not read are never sent. */
  close(): Promise<void>;
}

/** Rows a batch holds by default: enough to cost one round trip per thousand rows, few enough to stay small. */
export const CURSOR_BATCH_ROWS = 1000;

/** Every value as the server's text: readers of each type map it (see valueReader), not pg's own parsers. */
const AS_TEXT: pg.CustomTypesConfig = { getTypeParser: () => (text: string) => text };

/** Cursors opened by this process: each one's name is its own (a transaction holds one at a time; its end drops it). */
let opened = 0;

/**
 * Opens a cursor (DECLARE ... NO SCROLL CURSOR) over `text` with its parameters, on a client that
 * is in a transaction: rows come `batchRows` at a time (FETCH), as the consumer asks, each fetch a
 * statement of its own under the session's statement_timeout. The DECLARE goes by the extended
 * protocol even without parameters, so the server refuses a text of more than one statement (a
 * user's query is part of it), as it refuses a portal's. The planner is told every row will be
 * read (cursor_tuple_fraction 1, as for a portal), not a tenth, its default for cursors.
 */
export async function openRowCursor(client: pg.Client, text: string, values: readonly unknown[], batchRows = CURSOR_BATCH_ROWS): Promise<RowCursor> {
  const name = `batch_scorer_rows_${++opened}`;
  const declare = `DECLARE ${name} NO SCROLL CURSOR FOR `;
  await client.query("SELECT set_config('cursor_tuple_fraction', '1', true)");
  // queryMode is pg's (8.9 and later) though its types lack it: the extended protocol whatever the values.
  const statement: pg.QueryConfig & { queryMode: 'extended' } = { text: `${declare}${text}`, values: [...values], queryMode: 'extended' };
  await client.query(statement).catch((err: unknown) => {
    throw positionedIn(err, declare.length);
  });
  const fetch = { text: `FETCH FORWARD ${batchRows} FROM ${name}`, rowMode: 'array' as const, types: AS_TEXT };
  let fields: ResultField[] = [];
  return {
    // pg's callback form, not its promise: read through the promise, 1M rows of 13 columns cost
    // 2.94 s of CPU and a peak RSS of 104 MiB, through the callback 2.28 s and 73 MiB (pg-cursor:
    // 2.22 s, 81 MiB); with the promise each batch outlived the young generation's collections.
    read: () =>
      new Promise<TextRow[]>((resolve, reject) => {
        client.query<TextRow>(fetch, (err, result) => {
          if (err) return reject(err);
          if (fields.length === 0) fields = result.fields.map((f) => ({ name: f.name, typeOid: f.dataTypeID, typeModifier: f.dataTypeModifier }));
          resolve(result.rows);
        });
      }),
    fields: () => fields,
    close: () =>
      client.query(`CLOSE ${name}`).then(
        () => undefined,
        () => undefined,
      ),
  };
}

/**
 * A server error of the DECLARE whose position (1-based, in characters) counts in `text` alone, as
 * the caller sent it: the DECLARE's own `skipped` characters before it taken off.
 */
function positionedIn(err: unknown, skipped: number): unknown {
  const e = err as { position?: unknown };
  const position = Number(e.position);
  if (Number.isInteger(position) && position > skipped) e.position = String(position - skipped);
  return err;
}
