import { optionFlag, outDatabaseOf, type RunOptions } from '../config/index.js';
import { formatDatabaseUrl, formatTableName, parseDatabaseUrl, parseTableName, type DatabaseUrl, type TableName } from '../database/index.js';
import { UsageError } from '../errors.js';

/** Options that shape output files, which a run writing into a table has none of (see checkTableOptions). */
const FILE_OUTPUT_OPTIONS = ['format', 'compress', 'maxRowsPerFile', 'outputPerFile'] as const satisfies readonly (keyof RunOptions)[];

/** The runs table's name when --runs-table names none: in the out-table's schema. */
export const DEFAULT_RUNS_TABLE = 'batch_scorer_runs';

/**
 * Refuses options that do not go together with --out-table, naming the flags: options of output
 * files (--format, --compress, --max-rows-per-file, --output-per-file), an --output-encoding
 * other than UTF-8 (COPY reads UTF-8), --drift-fail (a held run's rows would be in the table
 * before it is judged), no database to write to (files in, and no --out-database), and
 * --out-database or --runs-table without --out-table. Reads nothing: enqueue and POST /runs refuse
 * at the door what a worker would.
 */
export function checkTableOptions(input: string, options: RunOptions): void {
  if (options.outTable === undefined) {
    const stray = (['outDatabase', 'runsTable'] as const).find((k) => options[k] !== undefined);
    if (stray) throw new UsageError(`${optionFlag(stray)} names where --out-table's rows go: add --out-table schema.table, or leave ${optionFlag(stray)} out`);
    return;
  }
  const files = FILE_OUTPUT_OPTIONS.filter((k) => options[k] !== undefined && options[k] !== false);
  if (files.length > 0) {
    throw new UsageError(`--out-table writes rows into a table, not files: leave out ${files.map(optionFlag).join(', ')}, or --out-table to write files`);
  }
  if (!/^utf-?8$/i.test(options.outputEncoding))
    throw new UsageError(`--output-encoding ${options.outputEncoding}: --out-table loads UTF-8 text; leave it out`);
  if (options.driftFail !== undefined) {
    throw new UsageError('--drift-fail holds a drifted run for a judgement, but --out-table publishes its rows at its end: leave out one of them');
  }
  if (outDatabaseOf(input, options) === undefined) {
    throw new UsageError(`--out-table ${options.outTable} needs --out-database postgresql://user@host:5432/db: the input is files, not a database`);
  }
}

/** Where a run writing into a table writes: the database, the out-table, the runs table. */
export interface TableTarget {
  database: DatabaseUrl;
  table: TableName;
  runsTable: TableName;
}

/** A run's table target from its options (checked by checkTableOptions); undefined for a run that writes files. */
export function tableTarget(input: string, options: RunOptions): TableTarget | undefined {
  const url = outDatabaseOf(input, options);
  if (options.outTable === undefined || url === undefined) return undefined;
  const table = parseTableName(options.outTable, '--out-table');
  return { database: parseDatabaseUrl(url), table, runsTable: parseTableName(options.runsTable ?? DEFAULT_RUNS_TABLE, '--runs-table', table.schema) };
}

/** A table target as manifests and messages name it. */
export function describeTarget(target: TableTarget): { database: string; table: string; runsTable: string } {
  return { database: formatDatabaseUrl(target.database), table: formatTableName(target.table), runsTable: formatTableName(target.runsTable) };
}
