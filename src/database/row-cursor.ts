import type pg from 'pg';

/**
 * The one file that knows the cursor library (pg-cursor): every read of many rows goes through
 * openRowCursor, so that another library (pg-query-stream, postgres.js) can take its place here
 * alone.
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
  /** Closes the portal (safe twice, and after an error): the rows not read are never sent. */
  close(): Promise<void>;
}

/** Rows a batch holds by default: enough to cost one round trip per thousand rows, few enough to stay small. */
export const CURSOR_BATCH_ROWS = 1000;

/** Every value as the server's text: readers of each type map it (see valueReader), not pg's own parsers. */
const AS_TEXT: pg.CustomTypesConfig = { getTypeParser: () => (text: string) => text };

/**
 * Opens a server-side cursor (a portal of the extended protocol) over `text` with its parameters,
 * on a client that is in a transaction: rows come `batchRows` at a time, as the consumer asks.
 */
export async function openRowCursor(client: pg.Client, text: string, values: readonly unknown[], batchRows = CURSOR_BATCH_ROWS): Promise<RowCursor> {
  // Loaded when rows are read, as pg is (see connectDatabase): every command imports the door.
  const { default: Cursor } = await import('pg-cursor');
  const cursor = client.query(new Cursor<TextRow>(text, [...values], { rowMode: 'array', types: AS_TEXT }));
  let fields: ResultField[] = [];
  return {
    read: () =>
      new Promise<TextRow[]>((resolve, reject) => {
        cursor.read(batchRows, (err, rows, result) => {
          if (err) return reject(err);
          if (fields.length === 0 && result)
            fields = (result.fields ?? []).map((f) => ({ name: f.name, typeOid: f.dataTypeID, typeModifier: f.dataTypeModifier }));
          resolve(rows);
        });
      }),
    fields: () => fields,
    close: () => cursor.close().catch(() => undefined),
  };
}
