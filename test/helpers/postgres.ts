import pg from 'pg';
import { afterEach } from 'vitest';

/** The machine's PostgreSQL (trust auth, database `test`), or the one DATABASE_URL names. */
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/** A schema of its own for one test: created now, dropped with everything in it after the test. */
export interface PrivateSchema {
  name: string;
  /** Runs one statement on a connection of its own. */
  sql<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
}

const made: string[] = [];

export async function privateSchema(): Promise<PrivateSchema> {
  const name = `bs_test_${process.pid}_${Math.random().toString(16).slice(2, 10)}`;
  const sql = async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  await sql(`CREATE SCHEMA ${name}`);
  made.push(name);
  return { name, sql };
}

afterEach(async () => {
  const names = made.splice(0);
  if (names.length === 0) return;
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    for (const name of names) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  } finally {
    await client.end();
  }
});
