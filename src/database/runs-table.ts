import type pg from 'pg';
import { BatchScorerError } from '../errors.js';
import { checkTableColumns, createTable, readTableColumns, type TableColumn } from './table-columns.js';
import { formatTableName, quoteTable, type TableName } from './sql-identifier.js';

/**
 * The runs table (`batch_scorer_runs` by default): one row per run published into a table, made
 * in the transaction that published it, so that a run id found there means its rows are in.
 */
export const RUNS_TABLE_COLUMNS: readonly TableColumn[] = [
  { name: 'run_id', type: 'text' },
  { name: 'published_at', type: 'timestamp with time zone' },
  { name: 'rows', type: 'bigint' },
  { name: 'manifest', type: 'jsonb' },
  { name: 'out_table', type: 'text' },
];

/** A run as the runs table records it. */
export interface RunRecord {
  runId: string;
  /** Rows the run published into `outTable`. */
  rows: number;
  /** The run's manifest, stored as jsonb. */
  manifest: object;
  /** The table its rows went to, as `formatTableName` writes it. */
  outTable: string;
  /** The run folder the manifest names: a run id found with another is another run's. */
  folder: string;
}

/**
 * The runs table checked (see checkTableColumns) and, when missing, made with `make` (run_id its
 * primary key); answers whether it exists now.
 */
export async function ensureRunsTable(client: pg.Client, table: TableName, { make = true }: { make?: boolean } = {}): Promise<boolean> {
  const what = `--runs-table ${formatTableName(table)}`;
  if ((await readTableColumns(client, table, what)) === undefined) {
    if (!make) return false;
    // run_id is its key: a second publish of a run waits on it, then finds the run recorded (see recordRun).
    await createTable(client, table, RUNS_TABLE_COLUMNS, { trailing: ['PRIMARY KEY (run_id)'] }).catch(async (err: unknown) => {
      // Two runs making it at once: one of them wins, and the other checks what it made.
      if ((await readTableColumns(client, table, what)) === undefined) throw err;
    });
  }
  checkTableColumns(what, (await readTableColumns(client, table, what)) ?? [], RUNS_TABLE_COLUMNS);
  return true;
}

/** When `runId` was published and into which table, or undefined when the runs table does not record it. */
export async function publishedRun(
  client: pg.Client,
  table: TableName,
  runId: string,
): Promise<{ publishedAt: string; rows: number; outTable: string; folder: string | null } | undefined> {
  const { rows } = await client.query<{ published_at: Date; rows: string; out_table: string; folder: string | null }>(
    `SELECT published_at, rows, out_table, manifest->>'folder' AS folder FROM ${quoteTable(table)} WHERE run_id = $1`,
    [runId],
  );
  const found = rows[0];
  return found && { publishedAt: found.published_at.toISOString(), rows: Number(found.rows), outTable: found.out_table, folder: found.folder };
}

/**
 * Records a run in the runs table, inside the caller's publishing transaction; false when it is
 * recorded already (by a publish that committed first: this one then waited on the unique index,
 * and must publish nothing). A run id recorded for another run folder is refused (E_RUN_EXISTS).
 */
export async function recordRun(client: pg.Client, table: TableName, record: RunRecord): Promise<boolean> {
  const inserted = await client.query(
    `INSERT INTO ${quoteTable(table)} (run_id, published_at, rows, manifest, out_table) VALUES ($1, now(), $2, $3, $4) ON CONFLICT (run_id) DO NOTHING`,
    [record.runId, record.rows, JSON.stringify(record.manifest), record.outTable],
  );
  if (inserted.rowCount === 1) return true;
  const before = await publishedRun(client, table, record.runId);
  if (before && before.folder !== record.folder) throw otherRun(table, record.runId, before.folder);
  return false;
}

/** E_RUN_EXISTS: the runs table records `runId` for the run folder `folder`, another run's. */
export function otherRun(table: TableName, runId: string, folder: string | null): BatchScorerError {
  return new BatchScorerError(
    'E_RUN_EXISTS',
    `${formatTableName(table)} records run ${runId} already, published from ${folder ?? 'another run folder'}: choose another --run-id (or another --runs-table)`,
  );
}

/** A run the runs table records as patching another (see patchingRun). */
export interface PatchingRun {
  runId: string;
  publishedAt: string;
  /** Its run folder, as its manifest names it. */
  folder: string | null;
  /** Its manifest, as recorded. */
  manifest: unknown;
}

/**
 * The run the runs table records as patching `runId` (a version `rescore` published: its
 * manifest's `patches.runId`), the latest when there are several; undefined when none does.
 */
export async function patchingRun(client: pg.Client, table: TableName, runId: string): Promise<PatchingRun | undefined> {
  const { rows } = await client.query<{ run_id: string; published_at: Date; folder: string | null; manifest: unknown }>(
    `SELECT run_id, published_at, manifest->>'folder' AS folder, manifest FROM ${quoteTable(table)}
      WHERE manifest->'patches'->>'runId' = $1 ORDER BY published_at DESC LIMIT 1`,
    [runId],
  );
  const found = rows[0];
  return found && { runId: found.run_id, publishedAt: found.published_at.toISOString(), folder: found.folder, manifest: found.manifest };
}

/**
 * Takes, inside the caller's transaction, the lock of the runs patching `runId` in `table`: a
 * second transaction taking it waits until the first ends, then sees what it recorded. An advisory
 * lock (on a digest of the names), so that a publisher needs no right but to insert.
 */
export async function lockPatchesOf(client: pg.Client, table: TableName, runId: string): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`batch-scorer patches ${formatTableName(table)} ${runId}`]);
}
