import { createHash } from 'node:crypto';
import {
  checkTableColumns,
  connectDatabase,
  createStagingTable,
  createTable,
  databaseError,
  ensureRunsTable,
  formatDatabaseUrl,
  formatTableName,
  otherRun,
  publishedRun,
  publishStaged,
  quoteTable,
  readTableColumns,
  recordRun,
  stagedRows,
  stagePart,
  type DatabaseConnection,
  type RunRecord,
  type TableColumn,
  type TableName,
} from '../database/index.js';
import { BatchScorerError, RunFolderError } from '../errors.js';
import type { Logger } from '../log.js';
import { formatLocation, type Storage } from '../storage/index.js';
import { readPart } from './assemble.js';
import type { Manifest } from './manifest.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { piecesOf, type SegmentDone } from './segment-done.js';
import { describeTarget, tableTarget, type TableTarget } from './table-options.js';

// How a table run's rows reach the table. Segments write their parts as CSV, the rows
// predictions.csv would hold (see outputFormat), and each part's bytes go to COPY ... FROM STDIN
// (FORMAT csv) as they are read: nothing is parsed or encoded again here, so the values in the
// table are those of predictions.csv by construction (the server's CSV reader takes an empty field
// as NULL), and loading costs this process little more than reading the parts. Parsing the parts
// into values to send them in COPY's text format would parse every field twice, once here:
// measured on 200,000 rows of predictions.csv (18 MB, Node 24.9, PostgreSQL 15 on this machine),
// the bytes as they are took 44-102 ms of this process's CPU and 0.35-0.8 s, parsed (papaparse)
// and re-encoded 1.4-1.5 s of CPU and 1.6-2.3 s.

/** Where a table run's rows are, once staged: what the manifest says of them, and the step that publishes them. */
export interface StagedTable {
  /** The rows the run publishes: its rows scored. */
  rows: number;
  /** The target as the manifest names it (see describeTarget), with the rows. */
  summary: ReturnType<typeof describeTarget> & { rows: number };
  /**
   * Publishes the staged rows with the run's record in one transaction (see publishStaged): the
   * table's `_SUCCESS`. Nothing is done for a run the runs table records already.
   */
  publish(manifest: Manifest): Promise<void>;
  /** Drops the staging table and the rows in it: for a run that will not publish them (a rescore that failed, which is not resumed). */
  discard(): Promise<void>;
  /** Closes the connection; safe to call twice. */
  end(): Promise<void>;
}

/** The staging table of a run: in the out-table's schema, named from the run id and a digest of its folder (two outs' runs of one id stay apart). */
export function stagingTable(run: Pick<PreparedRun, 'runId' | 'folder'>, target: TableTarget): TableName {
  const digest = createHash('sha256')
    .update(`${formatLocation(run.folder)}\n${run.runId}`)
    .digest('hex')
    .slice(0, 8);
  return { schema: target.table.schema, table: `batch_scorer_stage_${run.runId.slice(0, 35)}_${digest}` };
}

/** How a run's rows are staged and published besides the usual (see stageTable). */
export interface StageOptions {
  /**
   * Whether the runs table and the out-table are made when missing: a run's own publish makes
   * them (the default); a rescore adds rows to the tables its run published into, and a table
   * missing since is refused (see existingTableColumns).
   */
  make?: boolean;
  /**
   * Records the run in the runs table, first in the publishing transaction: false when it is
   * recorded already, and nothing is published then. Default: recordRun.
   */
  record?: (db: DatabaseConnection, runsTable: TableName, record: RunRecord) => Promise<boolean>;
}

/**
 * The final step's first half for a run writing into a table: the runs table made or checked, the
 * out-table made when missing (see StageOptions) and checked, and every segment's rows loaded into
 * the staging table (see stagePart), but for segments staged whole already by an earlier attempt.
 * A run the runs table records already (its publish committed, the run folder not yet finished)
 * stages nothing.
 */
export async function stageTable(
  storage: Storage,
  run: PreparedRun,
  done: SegmentDone[],
  log: Logger,
  signal?: AbortSignal,
  { make = true, record = (db, table, r) => recordRun(db.client, table, r) }: StageOptions = {},
): Promise<StagedTable> {
  const target = runTableTarget(run);
  const columns = run.output.tableColumns!;
  const rows = done.reduce((n, d) => n + d.rowsScored, 0);
  const staging = stagingTable(run, target);
  const db = await connectDatabase(target.database, { signal });
  const summary = { ...describeTarget(target), rows };
  try {
    const { client } = db;
    const published = await runRecorded(db, run, target, { make });
    if (published) {
      log.info({ table: summary.table }, 'the run is published already: its rows are in the table');
      await doing(`dropping ${formatTableName(staging)}`, () => client.query(`DROP TABLE IF EXISTS ${quoteTable(staging)}`));
      return { rows, summary, publish: async () => {}, discard: async () => {}, end: () => db.end() };
    }
    const types = make ? (await tableColumns(db, target, columns))! : await existingTableColumns(db, target, columns);
    await doing(`making the staging table ${formatTableName(staging)}`, () => createStagingTable(client, staging, types));
    const staged = await doing(`reading ${formatTableName(staging)}`, () => stagedRows(client, staging));
    for (const segment of run.input.segments) {
      const d = done[segment.index];
      if ((staged.get(segment.index) ?? 0) === d.rowsScored) continue;
      const parts = piecesOf(d, (piece) => runFiles.segmentPart(run.folder, segment.index, 'csv', piece));
      const source = (async function* () {
        for (const part of parts) for await (const chunk of await readPart(storage, part, signal)) yield chunk as Buffer;
      })();
      const what = `loading segment ${segment.index} (rows ${segment.firstRow + 1}-${segment.firstRow + segment.rows}) into ${formatTableName(staging)}`;
      // Parts that do not hold the rows their done marker counts are a damaged run folder: nothing of them is kept.
      const check = (loaded: number) => {
        if (loaded !== d.rowsScored) throw new RunFolderError(`${what}: its parts hold ${loaded} rows where its done marker counts ${d.rowsScored}`);
      };
      await stagePart(client, staging, segment.index, types, source, { doing: what, signal, check });
    }
    log.info({ table: summary.table, rows }, 'rows staged');
    const publish = async (manifest: Manifest) => {
      const recorded = { runId: run.runId, rows, manifest, outTable: summary.table, folder: formatLocation(run.folder) };
      const made = await doing(`publishing ${rows} rows into ${summary.table}`, () =>
        publishStaged(client, { staging, target: target.table, columns: types, rows, record: () => record(db, target.runsTable, recorded) }),
      );
      log.info({ table: summary.table, rows }, made ? 'rows published' : 'the run was published already: nothing more was published');
    };
    const discard = () => doing(`dropping ${formatTableName(staging)}`, () => client.query(`DROP TABLE IF EXISTS ${quoteTable(staging)}`)).then(() => {});
    return { rows, summary, publish, discard, end: () => db.end() };
  } catch (err) {
    await db.end();
    throw err;
  }
}

/**
 * Checks, before a run scores anything (a dry run too), what its rows will go into, making
 * nothing: a runs table that exists must not record the run id for another run folder, and an
 * out-table that exists must take the run's columns (see checkTableColumns).
 */
export async function checkTableTarget(run: PreparedRun, signal?: AbortSignal): Promise<void> {
  const target = runTableTarget(run);
  const db = await connectDatabase(target.database, { signal });
  try {
    await runRecorded(db, run, target, { make: false });
    await tableColumns(db, target, run.output.tableColumns!, { make: false });
  } finally {
    await db.end();
  }
}

/**
 * Whether the runs table records the run already, once made (with `make`) or checked; a record of
 * that run id from another run folder is refused (E_RUN_EXISTS).
 */
async function runRecorded(db: DatabaseConnection, run: PreparedRun, target: TableTarget, { make = true } = {}): Promise<boolean> {
  const runs = formatTableName(target.runsTable);
  const exists = await doing(`making or checking the runs table ${runs}`, () => ensureRunsTable(db.client, target.runsTable, { make }));
  if (!exists) return false;
  const recorded = await doing(`reading ${runs}`, () => publishedRun(db.client, target.runsTable, run.runId));
  if (recorded && recorded.folder !== formatLocation(run.folder)) throw otherRun(target.runsTable, run.runId, recorded.folder);
  return recorded !== undefined;
}

/**
 * The columns of an out-table that must exist, with its own types, once checked (see
 * checkTableColumns): a table missing is refused (E_DATABASE_REFUSED, naming it), never made.
 */
export async function existingTableColumns(db: DatabaseConnection, target: TableTarget, columns: TableColumn[]): Promise<TableColumn[]> {
  const found = await tableColumns(db, target, columns, { make: false });
  if (found) return found;
  throw new BatchScorerError(
    'E_DATABASE_REFUSED',
    `--out-table ${formatTableName(target.table)} does not exist in ${formatDatabaseUrl(target.database)} (dropped since its rows were published?): rows are added only to the table their run published into, which is not made again; restore it, or score the corrected input into a table anew`,
  );
}

/**
 * The out-table's columns with its own types, once it is made (when `make`, the default, and it is
 * missing) and checked; undefined when it is missing and not made.
 */
async function tableColumns(db: DatabaseConnection, target: TableTarget, columns: TableColumn[], { make = true } = {}): Promise<TableColumn[] | undefined> {
  const what = `--out-table ${formatTableName(target.table)}`;
  const read = () => doing(`reading ${what}`, () => readTableColumns(db.client, target.table, what));
  let existing = await read();
  if (!existing && !make) return undefined;
  if (!existing) {
    await doing(`making ${what}`, () => createTable(db.client, target.table, columns)).catch(async (err: unknown) => {
      // Two runs making it at once: one of them wins, and the other checks what it made.
      if (!(await read())) throw err;
    });
    existing = (await read()) ?? [];
  }
  return checkTableColumns(what, existing, columns);
}

function runTableTarget(run: PreparedRun): TableTarget {
  const target = tableTarget(run.request.input, run.request.options);
  if (!target || !run.output.tableColumns) throw new RunFolderError(`run ${run.runId} has no table columns in its run.json; start the run anew`);
  return target;
}

/** A database step, its failure catalogued (see databaseError) and saying what was being done. */
export async function doing<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw databaseError(err, what);
  }
}
