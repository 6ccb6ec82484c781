import type pg from 'pg';

/**
 * Runs `work` in one transaction on `client`: committed when it returns, rolled back when it
 * throws (its error is the one thrown; a rollback that fails too, on a lost connection, adds
 * nothing the first error does not say). `begin` is the statement that opens it (`BEGIN READ
 * ONLY`, say).
 */
export async function inTransaction<T>(client: pg.Client, work: () => Promise<T>, begin = 'BEGIN'): Promise<T> {
  await client.query(begin);
  let result: T;
  try {
    result = await work();
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  await client.query('COMMIT');
  return result;
}
