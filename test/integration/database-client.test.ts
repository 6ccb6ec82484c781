import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { connectDatabase, parseDatabaseUrl } from '../../src/database/index.js';
import { BatchScorerError } from '../../src/errors.js';
import { DATABASE_URL } from '../helpers/postgres.js';

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err as BatchScorerError,
  );

describe('connections to the real PostgreSQL', () => {
  it('connects as batch-scorer and ends twice safely', async () => {
    const db = await connectDatabase(parseDatabaseUrl(DATABASE_URL));
    const { rows } = await db.client.query<{ name: string }>('SELECT current_setting($1) AS name', ['application_name']);
    expect(rows[0].name).toBe('batch-scorer');
    await db.end();
    await db.end();
  });

  it('says a database that does not exist is refused, and a server that does not answer may pass', async () => {
    const url = parseDatabaseUrl(DATABASE_URL);
    const missing = await caught(connectDatabase({ ...url, database: 'no_such_database_here' }));
    expect(missing?.code).toBe('E_DATABASE_REFUSED');
    expect(missing?.message).toMatch(/^connecting to postgresql:\/\/.*\/no_such_database_here: .*SQLSTATE 3D000/);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await caught(connectDatabase({ ...url, port }));
    expect(refused?.code).toBe('E_DATABASE');
    expect(refused?.retriable).toBe(true);
  });

  it('stops connecting when its signal is aborted, at any point, leaving nothing open', async () => {
    await import('pg');
    for (const delay of [0, 1, 3, 10]) {
      const stop = new AbortController();
      const connecting = connectDatabase(parseDatabaseUrl(DATABASE_URL), { signal: stop.signal });
      setTimeout(() => stop.abort(), delay);
      const err = await caught(connecting.then((db) => db.end()));
      // Connected before the abort: ended by it, or by the test.
      if (err) expect(err.code).toBe('E_ABORTED');
    }
    const stop = new AbortController();
    stop.abort();
    expect((await caught(connectDatabase(parseDatabaseUrl(DATABASE_URL), { signal: stop.signal })))?.code).toBe('E_ABORTED');
  });

  it('bounds a statement by statement_timeout, as a passing failure', async () => {
    const db = await connectDatabase(parseDatabaseUrl(DATABASE_URL), { statementTimeoutMs: 200 });
    try {
      const err = await caught(db.client.query('SELECT pg_sleep(5)'));
      expect(err).toBeInstanceOf(Error);
      expect((err as unknown as { code: string }).code).toBe('57014');
    } finally {
      await db.end();
    }
  });
});
