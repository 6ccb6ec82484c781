import type pg from 'pg';
import { BatchScorerError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import { quoteIdentifier, quoteTable, type TableName } from './sql-identifier.js';

/** A column as a table is made with: its name as stored, and its type as PostgreSQL writes it (`double precision`, `numeric(10,2)`). */
export interface TableColumn {
  name: string;
  type: string;
}

/** A column of a table that exists: its type (format_type's text) and whether a row may leave it out. */
export interface ExistingColumn extends TableColumn {
  notNull: boolean;
  /** A default, an identity or a generated value fills it when a row leaves it out. */
  hasDefault: boolean;
}

/**
 * The columns of `table` in their order, or undefined when there is no such table. A view, a
 * sequence or another kind of relation of that name is refused (E_DATABASE_REFUSED): rows go to
 * tables only. `what` names the table in messages as the user named it (`--out-table x.y`).
 */
export async function readTableColumns(client: pg.Client, table: TableName, what: string): Promise<ExistingColumn[] | undefined> {
  const found = await client.query<{ oid: number; kind: string }>(
    `SELECT c.oid, c.relkind AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
    [table.schema, table.table],
  );
  if (found.rows.length === 0) return undefined;
  if (found.rows[0].kind !== 'r' && found.rows[0].kind !== 'p') {
    throw new BatchScorerError('E_DATABASE_REFUSED', `${what} is not a table (a view or another kind of relation has that name): name a table`);
  }
  const { rows } = await client.query<ExistingColumn>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull",
            (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '') AS "hasDefault"
       FROM pg_attribute a
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [found.rows[0].oid],
  );
  return rows;
}

/**
 * `CREATE [UNLOGGED] TABLE IF NOT EXISTS` with `columns`, after any `leading` column definitions
 * and before any `trailing` constraints (both SQL the caller wrote, never a user's text).
 */
export async function createTable(
  client: pg.Client,
  table: TableName,
  columns: readonly TableColumn[],
  options: { unlogged?: boolean; leading?: readonly string[]; trailing?: readonly string[] } = {},
): Promise<void> {
  const definitions = [...(options.leading ?? []), ...columns.map((c) => `${quoteIdentifier(c.name)} ${checkTypeName(c.type)}`), ...(options.trailing ?? [])];
  await client.query(`CREATE ${options.unlogged ? 'UNLOGGED ' : ''}TABLE IF NOT EXISTS ${quoteTable(table)} (${definitions.join(', ')})`);
}

/**
 * A type as format_type writes one (`double precision`, `numeric(10,2)`, `timestamp(3) with time
 * zone`, `public.mood`, `text[]`): types reach statements as text, so nothing else is let through.
 */
const TYPE_NAME = /^(?:[a-z_][a-z0-9_$]*\.)?[a-z_][a-z0-9_$ ]*(?:\(\d+(?:, ?\d+)?\))?(?: with(?:out)? time zone)?(?:\[\])*$/i;

function checkTypeName(type: string): string {
  if (!TYPE_NAME.test(type)) throw new BatchScorerError('E_DATABASE_REFUSED', `${quoteIdentifier(excerpt(type, 100))} is not a column type this tool writes`);
  return type;
}

/** Types whose column holds the text of any value exactly, as a CSV file would: any column fits one of them. */
const HOLDS_ANY_TEXT: readonly string[] = ['text', 'character varying'];

/** Types a value of a narrower type goes into without loss, by the narrower type. */
const WIDER: Readonly<Record<string, readonly string[]>> = {
  smallint: ['integer', 'bigint', 'numeric', 'double precision'],
  integer: ['bigint', 'numeric', 'double precision'],
  bigint: ['numeric'],
  real: ['double precision', 'numeric'],
  'double precision': ['numeric'],
  json: ['jsonb'],
  jsonb: ['json'],
};

/** Whether a column of type `have` holds every value of type `want` as it is. */
export function typeFits(want: string, have: string): boolean {
  return want === have || HOLDS_ANY_TEXT.includes(have) || (WIDER[want]?.includes(have) ?? false);
}

/**
 * Checks a table that exists against the columns rows will be written to: each must be there
 * (by its exact name) with a type that holds its values (see typeFits), and every other column
 * must take a row that leaves it out (nullable, or with a default). Answers the columns with the
 * table's own types, which values are loaded as. A misfit is E_DATABASE_REFUSED naming the column.
 */
export function checkTableColumns(what: string, existing: readonly ExistingColumn[], wanted: readonly TableColumn[]): TableColumn[] {
  const byName = new Map(existing.map((c) => [c.name, c]));
  const fix = `alter the table, drop it to have it made anew, or name another table`;
  const checked = wanted.map((want) => {
    const have = byName.get(want.name);
    if (!have) throw new BatchScorerError('E_DATABASE_REFUSED', `${what} has no column ${shown(want.name)} (${want.type}), which the run writes: ${fix}`);
    if (!typeFits(want.type, have.type)) {
      throw new BatchScorerError(
        'E_DATABASE_REFUSED',
        `${what}: column ${shown(want.name)} is ${have.type}, which does not hold the ${want.type} values the run writes: ${fix}`,
      );
    }
    return { name: want.name, type: have.type };
  });
  const written = new Set(wanted.map((c) => c.name));
  const unfilled = existing.find((c) => !written.has(c.name) && c.notNull && !c.hasDefault);
  if (unfilled) {
    throw new BatchScorerError(
      'E_DATABASE_REFUSED',
      `${what}: column ${shown(unfilled.name)} is NOT NULL without a default, and the run writes no value to it: ${fix}`,
    );
  }
  return checked;
}

function shown(name: string): string {
  return quoteIdentifier(excerpt(name, 200));
}
