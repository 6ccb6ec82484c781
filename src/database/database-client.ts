import type pg from 'pg';
import { AbortedError, BatchScorerError, errorMessage } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import { type DatabaseUrl, formatDatabaseUrl } from './database-url.js';

/** How a connection is opened: the bounds a stranger's query and a dead server are held to. */
export interface ConnectOptions {
  /** Stops connecting, and ends the connection once open (its statement is cancelled by the server). */
  signal?: AbortSignal;
  /** The longest one statement may run, in ms (the server's statement_timeout); 0: no bound. */
  statementTimeoutMs?: number;
  /** The longest connecting may take, in ms. */
  connectTimeoutMs?: number;
}

/** Statements end after this long by default: a planning scan of a large table fits well within it. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30 * 60_000;

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** A connection to one database; `end()` is safe to call twice. */
export interface DatabaseConnection {
  client: pg.Client;
  /** The database, as messages name it (no password: the URL never holds one). */
  name: string;
  end(): Promise<void>;
}

/**
 * Opens a connection as `batch-scorer` (its application_name, seen in pg_stat_activity). The
 * password, if the server asks for one, comes from PGPASSWORD or ~/.pgpass, as libpq's clients
 * take it. Connecting errors are catalogued (see databaseError).
 */
export async function connectDatabase(db: DatabaseUrl, options: ConnectOptions = {}): Promise<DatabaseConnection> {
  const name = formatDatabaseUrl(db);
  if (options.signal?.aborted) throw new AbortedError(`connecting to ${name} was cancelled`);
  // Loaded when a database is used: the door is imported by every command (config checks database
  // URLs), and pg would otherwise cost each of them its load time and heap.
  const { default: pgModule } = await import('pg');
  // Aborted while pg was loading: nothing is opened.
  if (options.signal?.aborted) throw new AbortedError(`connecting to ${name} was cancelled`);
  const client = new pgModule.Client({
    host: db.host,
    port: db.port,
    database: db.database,
    ...(db.user !== undefined && { user: db.user }),
    ...(db.sslmode !== undefined && db.sslmode !== 'disable' && db.sslmode !== 'prefer' && { ssl: { rejectUnauthorized: db.sslmode === 'verify-full' } }),
    application_name: 'batch-scorer',
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  });
  // A connection lost while idle emits 'error'; the next query fails with it, catalogued there.
  client.on('error', () => {});
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    options.signal?.removeEventListener('abort', onAbort);
    await client.end().catch(() => {});
  };
  const onAbort = () => void end();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // A connection ended while it is made never settles its connect: the abort answers instead.
    await unlessAborted(client.connect(), options.signal);
  } catch (err) {
    await end();
    if (options.signal?.aborted) throw new AbortedError(`connecting to ${name} was cancelled`, err);
    throw databaseError(err, `connecting to ${name}`);
  }
  return { client, name, end };
}

/**
 * `work`, or its failure once `signal` is aborted: the connection is ended then (see
 * connectDatabase), and what waits on it (a connect, a cursor's read) may never be answered.
 */
export function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      work.catch(() => undefined);
      return reject(signal.reason as Error);
    }
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * SQLSTATE classes that may pass: connection exceptions (08), transaction rollbacks such as
 * serialization failures and deadlocks (40), insufficient resources (53), operator intervention
 * such as a shutdown or a cancelled statement (57) and system errors (58).
 */
const PASSING_CLASSES = new Set(['08', '40', '53', '57', '58']);

/** Network errors of Node's own, before any server answered. */
const PASSING_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * Any error of the pg client as a catalogued one: E_DATABASE when trying again later may help
 * (see PASSING_CLASSES), E_DATABASE_REFUSED when the server will refuse again (no such table,
 * permission denied, a syntax error, a login refused). `doing` says what was being done
 * ("reading public.rentals"); the server's message is kept, bounded, with its SQLSTATE.
 */
export function databaseError(err: unknown, doing: string): BatchScorerError {
  if (err instanceof BatchScorerError) return err;
  const code = (err as { code?: unknown }).code;
  const sqlstate = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  const message = `${doing}: ${excerpt(errorMessage(err), 600)}${sqlstate ? ` (SQLSTATE ${sqlstate})` : ''}`;
  const passing =
    sqlstate === undefined
      ? typeof code !== 'string' || PASSING_NETWORK.has(code) || /timeout|terminated/i.test(errorMessage(err))
      : PASSING_CLASSES.has(sqlstate.slice(0, 2));
  return new BatchScorerError(passing ? 'E_DATABASE' : 'E_DATABASE_REFUSED', message, { cause: err });
}
