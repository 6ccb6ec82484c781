import { UsageError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';

/**
 * A PostgreSQL database as a run names it: `postgresql://user@host:5432/db`. Parsed once from user
 * text, so the rest of the tool works on a checked value. It never carries a password: options
 * travel in job data, manifests and pages, so the password comes from the environment of the
 * process that connects (PGPASSWORD, or a ~/.pgpass file), as psql takes it.
 */
export interface DatabaseUrl {
  host: string;
  port: number;
  database: string;
  /** The role to connect as; absent: PGUSER, or the user the process runs as (libpq's rule). */
  user?: string;
  /** libpq's `sslmode`, the one query parameter taken: `disable`, `prefer`, `require`, `verify-ca`, `verify-full`. */
  sslmode?: SslMode;
}

export const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

const DATABASE_SCHEME = /^postgres(?:ql)?:\/\//i;

/** Whether a location text names a PostgreSQL database (`postgresql://` or `postgres://`) rather than files. */
export function isDatabaseUrl(text: string): boolean {
  return DATABASE_SCHEME.test(text);
}

const USAGE = 'use postgresql://user@host:5432/database';

/**
 * Parses and checks a database URL: a host, a database, a port if any, a user if any, and only
 * `sslmode` besides. A password is refused, naming where it should come from instead; the message
 * never repeats the URL's credentials.
 */
export function parseDatabaseUrl(text: string): DatabaseUrl {
  if (!isDatabaseUrl(text)) throw new UsageError(`'${excerpt(text, 120)}' is not a database URL: ${USAGE}`);
  let url: URL;
  try {
    url = new URL(text.replace(DATABASE_SCHEME, 'postgresql://'));
  } catch (err) {
    throw new UsageError(`database URL is not a valid URL: ${USAGE}`, { cause: err });
  }
  const shown = formatDatabaseUrlParts(url.hostname, url.port, url.pathname.slice(1), decodeURIComponent(url.username));
  if (url.password !== '') {
    throw new UsageError(`database URL ${shown} carries a password: remove it and set PGPASSWORD (or a ~/.pgpass file) where batch-scorer runs`);
  }
  if (url.hostname === '') throw new UsageError(`database URL ${shown} names no host: ${USAGE}`);
  const database = decodeURIComponent(url.pathname.slice(1));
  if (database === '' || database.includes('/')) throw new UsageError(`database URL ${shown} names no database: ${USAGE}`);
  const keys = [...url.searchParams.keys()];
  const other = keys.find((k) => k !== 'sslmode');
  if (other !== undefined) throw new UsageError(`database URL ${shown} has the parameter '${excerpt(other, 64)}': only sslmode is taken`);
  const sslmode = url.searchParams.get('sslmode') ?? undefined;
  if (sslmode !== undefined && !(SSL_MODES as readonly string[]).includes(sslmode)) {
    throw new UsageError(`database URL ${shown}: sslmode must be one of ${SSL_MODES.join(', ')}`);
  }
  const port = url.port === '' ? 5432 : Number(url.port);
  const user = url.username === '' ? undefined : decodeURIComponent(url.username);
  return { host: url.hostname, port, database, ...(user !== undefined && { user }), ...(sslmode !== undefined && { sslmode: sslmode as SslMode }) };
}

/** The URL as the tool writes it back (job data, manifests, pages): never a password, which it never holds. */
export function formatDatabaseUrl(db: DatabaseUrl): string {
  const text = formatDatabaseUrlParts(db.host, String(db.port), encodeURIComponent(db.database), db.user);
  return db.sslmode === undefined ? text : `${text}?sslmode=${db.sslmode}`;
}

function formatDatabaseUrlParts(host: string, port: string, database: string, user?: string): string {
  const who = user === undefined || user === '' ? '' : `${encodeURIComponent(user)}@`;
  return excerpt(`postgresql://${who}${host}${port === '' ? '' : `:${port}`}/${database}`, 300);
}

/** Whether two database URLs name the same database on the same server (the user and sslmode aside). */
export function sameDatabase(a: DatabaseUrl, b: DatabaseUrl): boolean {
  return a.host.toLowerCase() === b.host.toLowerCase() && a.port === b.port && a.database === b.database;
}
