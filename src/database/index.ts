/** PostgreSQL as a place rows come from and go to: URLs, names, connections. Knows nothing of runs. */

// Database URLs and table names, checked once from user text.
export { formatDatabaseUrl, isDatabaseUrl, parseDatabaseUrl, sameDatabase, SSL_MODES, type DatabaseUrl, type SslMode } from './database-url.js';
export { checkIdentifier, formatTableName, parseTableName, quoteIdentifier, quoteTable, MAX_IDENTIFIER_BYTES, type TableName } from './sql-identifier.js';

// Connections and their catalogued errors.
export { connectDatabase, databaseError, DEFAULT_STATEMENT_TIMEOUT_MS, type ConnectOptions, type DatabaseConnection } from './database-client.js';

// Reading rows: a source's columns, its ordered keys, a key range's rows (through a cursor, in a
// READ ONLY transaction), and the values each column type is read as.
export {
  describeColumns,
  describeSource,
  MAX_QUERY_BYTES,
  primaryKey,
  queryProblem,
  readFailure,
  readKeyRange,
  scanKeys,
  type KeyRange,
  type RangeRows,
  type ReadOptions,
  type RowSource,
  type ScannedKey,
  type SourceColumn,
} from './row-source.js';
export { CURSOR_BATCH_ROWS, type ResultField, type TextRow } from './row-cursor.js';
export { columnValueType, valueReader, type ColumnValueType, type ValueReader } from './column-values.js';

// Writing rows: tables made and checked, COPY into a staging table, one transaction to publish, the runs table.
export { inTransaction } from './transaction.js';
export { checkTableColumns, createTable, readTableColumns, typeFits, type ExistingColumn, type TableColumn } from './table-columns.js';
export { createStagingTable, publishStaged, stagedRows, stagePart, STAGING_ORDER, STAGING_PART } from './staging-table.js';
export {
  ensureRunsTable,
  lockPatchesOf,
  otherRun,
  patchingRun,
  publishedRun,
  recordRun,
  RUNS_TABLE_COLUMNS,
  type PatchingRun,
  type RunRecord,
} from './runs-table.js';
