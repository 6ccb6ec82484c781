import { UsageError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';

/** PostgreSQL's longest identifier (NAMEDATALEN - 1 bytes); a longer one is cut by the server, silently. */
export const MAX_IDENTIFIER_BYTES = 63;

/** A table as `schema.table`: both parts as the server stores them (unquoted names folded to lower case). */
export interface TableName {
  schema: string;
  table: string;
}

/** An identifier quoted for SQL text: the only way a name a user gave reaches a statement. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `"schema"."table"`, quoted for SQL text. */
export function quoteTable(name: TableName): string {
  return `${quoteIdentifier(name.schema)}.${quoteIdentifier(name.table)}`;
}

/** `schema.table` as users write it back: quoted only where a part needs it. */
export function formatTableName(name: TableName): string {
  const part = (p: string) => (/^[a-z_][a-z0-9_$]*$/.test(p) ? p : quoteIdentifier(p));
  return `${part(name.schema)}.${part(name.table)}`;
}

const PART = /"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*)/y;

/**
 * Parses `table`, `schema.table` or quoted parts (`"Sales"."Q1 rows"`), as psql reads them:
 * unquoted parts fold to lower case, quoted ones are kept. A bare table is in `defaultSchema`
 * (`public`, where psql would look first). `what` names the flag or field in messages.
 */
export function parseTableName(text: string, what: string, defaultSchema = 'public'): TableName {
  const parts: string[] = [];
  let at = 0;
  while (at < text.length) {
    PART.lastIndex = at;
    const m = PART.exec(text);
    if (!m) break;
    parts.push(m[1] === undefined ? m[2].toLowerCase() : m[1].replaceAll('""', '"'));
    at = PART.lastIndex;
    if (at < text.length && text[at] !== '.') break;
    if (at < text.length) at += 1;
  }
  const bad = at !== text.length || parts.length === 0 || parts.length > 2 || text.endsWith('.');
  if (bad) throw new UsageError(`${what}: '${excerpt(text, 200)}' is not a table name: use table, schema.table or "Quoted Name"`);
  for (const part of parts) checkIdentifier(part, what);
  return parts.length === 1 ? { schema: defaultSchema, table: parts[0] } : { schema: parts[0], table: parts[1] };
}

/** A column or table name the server would keep whole: at most MAX_IDENTIFIER_BYTES, no NUL. */
export function checkIdentifier(name: string, what: string): string {
  if (name === '' || name.includes('\0') || Buffer.byteLength(name) > MAX_IDENTIFIER_BYTES) {
    throw new UsageError(`${what}: '${excerpt(name, 200)}' is not a PostgreSQL name: at most ${MAX_IDENTIFIER_BYTES} bytes, no NUL`);
  }
  return name;
}
