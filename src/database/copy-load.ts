import { pipeline } from 'node:stream/promises';
import type pg from 'pg';

/**
 * Sends `source`'s bytes to a `COPY ... FROM STDIN` statement and answers the rows the server
 * loaded. The one file that knows the COPY library (pg-copy-streams): another (postgres.js's
 * `copy`, say) would take its place here alone. Backpressure is the socket's: memory holds what
 * the server has not yet read, never the source. A failed COPY rejects with the server's error
 * (its `where` says the line and column), and the statement is ended (CopyFail) when `signal`
 * aborts or the source fails, so the transaction around it can roll back.
 */
export async function copyFromStdin(client: pg.Client, statement: string, source: AsyncIterable<Buffer>, signal?: AbortSignal): Promise<number> {
  // Loaded when rows are loaded, as pg is (see connectDatabase).
  const { from: copyFrom } = await import('pg-copy-streams');
  const stream = client.query(copyFrom(statement));
  await pipeline(source, stream, { signal });
  return stream.rowCount;
}
