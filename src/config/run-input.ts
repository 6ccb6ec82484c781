import { type DatabaseUrl, formatDatabaseUrl, isDatabaseUrl, parseDatabaseUrl } from '../database/index.js';
import { UsageError } from '../errors.js';
import { formatLocation, type Location, parseLocation } from '../storage/index.js';
import { optionFlag, type OptionNaming, type RunOptions } from './run-options.js';

/** What a run reads: files at a location (a file, a folder or prefix, a glob), or a PostgreSQL database. */
export type RunInput = { kind: 'files'; location: Location } | { kind: 'database'; database: DatabaseUrl };

/** A run's input as the user wrote it: a database URL (`postgresql://`, `postgres://`) or a location. */
export function parseRunInput(text: string): RunInput {
  return isDatabaseUrl(text) ? { kind: 'database', database: parseDatabaseUrl(text) } : { kind: 'files', location: parseLocation(text) };
}

/** The input as the tool writes it back (job data, run files, manifests): a location, or a database URL without a password. */
export function formatRunInput(input: RunInput): string {
  return input.kind === 'database' ? formatDatabaseUrl(input.database) : formatLocation(input.location);
}

/** The options that say which rows of a database input a run reads. */
type DatabaseOptions = Pick<RunOptions, 'query' | 'table' | 'segmentBy'>;

/**
 * Refuses options that do not fit the input: a database input reads `table` or `query` (one of
 * them, and a query names its key column, `segmentBy`); files take none of the three. Messages
 * name the options as `naming` says (`--table`, or `table` in job data and files).
 */
export function checkInputOptions(input: RunInput, options: DatabaseOptions, naming: OptionNaming = 'flags'): void {
  const name = (field: keyof DatabaseOptions) => (naming === 'flags' ? optionFlag(field) : field);
  const given = (['query', 'table', 'segmentBy'] as const).filter((field) => options[field] !== undefined);
  if (input.kind === 'files') {
    if (given.length > 0) {
      throw new UsageError(
        `${given.map(name).join(', ')}: for a database input (postgresql://user@host:5432/db); ${formatLocation(input.location)} is a file location`,
      );
    }
    return;
  }
  const where = formatDatabaseUrl(input.database);
  if (options.query === undefined && options.table === undefined) {
    throw new UsageError(`${where} is a database: name its rows with ${name('table')} schema.table or ${name('query')} 'SELECT ...'`);
  }
  if (options.query !== undefined && options.table !== undefined) throw new UsageError(`${name('table')} and ${name('query')}: give one of them, not both`);
  if (options.query !== undefined && options.segmentBy === undefined) {
    throw new UsageError(`${name('query')} needs ${name('segmentBy')} <column>: a unique, never NULL column of its rows, which segments are ranges of`);
  }
}
