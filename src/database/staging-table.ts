import type pg from 'pg';
import { BatchScorerError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import { copyFromStdin } from './copy-load.js';
import { databaseError } from './database-client.js';
import { createTable, type TableColumn } from './table-columns.js';
import { formatTableName, quoteIdentifier, quoteTable, type TableName } from './sql-identifier.js';
import { inTransaction } from './transaction.js';

/**
 * The staging table's own columns, before the rows' columns: which part a row came in (set by
 * each part's transaction, see stagePart) and its place in the order rows were loaded, so that
 * publishing copies rows in part order and, within a part, in the order its text held them.
 */
export const STAGING_PART = 'batch_scorer_part';
export const STAGING_ORDER = 'batch_scorer_order';

/** The session setting a part's transaction sets, which the part column's default reads. */
const PART_SETTING = 'batch_scorer.part';

/**
 * Makes the staging table when missing: UNLOGGED (it is written once and read once; a server
 * crash empties it, which publishStaged notices by its count), with `columns` as the target's.
 */
export async function createStagingTable(client: pg.Client, staging: TableName, columns: readonly TableColumn[]): Promise<void> {
  await createTable(client, staging, columns, {
    unlogged: true,
    leading: [
      `${quoteIdentifier(STAGING_PART)} integer NOT NULL DEFAULT current_setting('${PART_SETTING}')::integer`,
      `${quoteIdentifier(STAGING_ORDER)} bigint GENERATED ALWAYS AS IDENTITY`,
    ],
  });
}

/** The rows staged so far, by part; empty when the staging table does not exist. */
export async function stagedRows(client: pg.Client, staging: TableName): Promise<Map<number, number>> {
  const { rows } = await client.query<{ part: number; rows: string }>(
    `SELECT ${quoteIdentifier(STAGING_PART)} AS part, count(*) AS rows FROM ${quoteTable(staging)} GROUP BY 1`,
  );
  return new Map(rows.map((r) => [r.part, Number(r.rows)]));
}

/**
 * Loads one part's rows into the staging table in one transaction that first deletes what an
 * earlier load of the same part left, so a part loaded again is there once. Loads of one staging
 * table wait for each other (a lock taken first): two loaders of the same part could otherwise
 * both delete nothing and both insert. `source` is CSV text in UTF-8 as RFC 4180 writes it, no
 * header, a line per row with `columns` in order: an empty field, quoted or not, is NULL
 * (FORCE_NULL), as a CSV reader takes a missing value. Answers the rows loaded.
 */
export async function stagePart(
  client: pg.Client,
  staging: TableName,
  part: number,
  columns: readonly TableColumn[],
  source: AsyncIterable<Buffer>,
  options: {
    /** What is being done, as the error of a failed load says it (`loading segment 3 into x`). */
    doing: string;
    signal?: AbortSignal;
    /** Hears the rows loaded before they are committed: what it throws rolls the load back, and is the error thrown. */
    check?: (rows: number) => void;
  },
): Promise<number> {
  const names = columns.map((c) => quoteIdentifier(c.name)).join(', ');
  const table = quoteTable(staging);
  try {
    return await inTransaction(client, async () => {
      await client.query(`LOCK TABLE ${table} IN SHARE ROW EXCLUSIVE MODE`);
      await client.query(`SELECT set_config($1, $2, true)`, [PART_SETTING, String(part)]);
      await client.query(`DELETE FROM ${table} WHERE ${quoteIdentifier(STAGING_PART)} = $1`, [part]);
      const rows = await copyFromStdin(
        client,
        `COPY ${table} (${names}) FROM STDIN WITH (FORMAT csv, FORCE_NULL (${names}), ENCODING 'UTF8')`,
        source,
        options.signal,
      );
      options.check?.(rows);
      return rows;
    });
  } catch (err) {
    // The server says where a value did not fit: `COPY <table>, line 3, column price: "abc"`.
    const where = (err as { where?: unknown }).where;
    throw databaseError(err, typeof where === 'string' ? `${options.doing} (${excerpt(where, 300)})` : options.doing);
  }
}

/**
 * Publishes the staged rows in one transaction: `record` runs first and answers false when the
 * rows are published already (nothing is inserted then, and the staging table, left over, is
 * dropped); else every staged row is inserted into `target` in part order, and the staging table
 * dropped. A staging table that does not hold `rows` rows (a server crash empties an unlogged
 * table) publishes nothing: E_DATABASE, so the rows are staged again. Answers whether this call
 * published them.
 */
export async function publishStaged(
  client: pg.Client,
  options: { staging: TableName; target: TableName; columns: readonly TableColumn[]; rows: number; record: () => Promise<boolean> },
): Promise<boolean> {
  const { staging, target, rows } = options;
  const names = options.columns.map((c) => quoteIdentifier(c.name)).join(', ');
  return inTransaction(client, async () => {
    if (!(await options.record())) {
      await client.query(`DROP TABLE IF EXISTS ${quoteTable(staging)}`);
      return false;
    }
    const order = `${quoteIdentifier(STAGING_PART)}, ${quoteIdentifier(STAGING_ORDER)}`;
    const inserted = await client.query(`INSERT INTO ${quoteTable(target)} (${names}) SELECT ${names} FROM ${quoteTable(staging)} ORDER BY ${order}`);
    if (inserted.rowCount !== rows) {
      throw new BatchScorerError(
        'E_DATABASE',
        `the staging table ${formatTableName(staging)} holds ${inserted.rowCount} rows where ${rows} were staged (emptied by a server restart?): nothing was published; the rows are staged again when the run is assembled again`,
      );
    }
    await client.query(`DROP TABLE ${quoteTable(staging)}`);
    return true;
  });
}
