import { describe, expect, it } from 'vitest';
import { parseRunOptions, type RunOptionsInput } from '../../src/config/run-options.js';
import { UsageError } from '../../src/errors.js';
import { buildOutputSchema } from '../../src/scoring/output-schema.js';
import { planTableColumns } from '../../src/scoring/table-layout.js';
import { checkTableOptions, tableTarget } from '../../src/scoring/table-options.js';
import { thrown } from '../helpers/rejection.js';

const DB = 'postgresql://scorer@db:5432/analytics';
const refusal = (input: string, options: RunOptionsInput) => thrown(() => checkTableOptions(input, parseRunOptions(options)), UsageError).message;

describe('--out-table and the options around it', () => {
  it('refuses the options of output files, naming the flags', () => {
    expect(refusal('in.csv', { outTable: 's.t', outDatabase: DB, format: 'parquet', maxRowsPerFile: 10, outputPerFile: true })).toBe(
      '--out-table writes rows into a table, not files: leave out --format, --max-rows-per-file, --output-per-file, or --out-table to write files',
    );
    expect(refusal('in.csv', { outTable: 's.t', outDatabase: DB, compress: 'none' })).toContain('leave out --compress');
    expect(refusal('in.csv', { outTable: 's.t', outDatabase: DB, outputEncoding: 'latin1' })).toContain('--output-encoding latin1');
    expect(refusal('in.csv', { outTable: 's.t', outDatabase: DB, driftFail: 0.3 })).toContain('--drift-fail');
  });

  it('needs --out-database for files, and refuses --out-database or --runs-table alone', () => {
    expect(refusal('in.csv', { outTable: 's.t' })).toBe(
      '--out-table s.t needs --out-database postgresql://user@host:5432/db: the input is files, not a database',
    );
    expect(refusal('in.csv', { outDatabase: DB })).toMatch(/^--out-database names where --out-table's rows go/);
    expect(refusal('in.csv', { runsTable: 'runs' })).toMatch(/^--runs-table names where/);
    checkTableOptions('in.csv', parseRunOptions({ outTable: 's.t', outDatabase: DB }));
    // A database input is the out-table's database by default.
    checkTableOptions('postgresql://reader@db:5432/analytics', parseRunOptions({ outTable: 's.t' }));
  });

  it('checks the names as options, never echoing a password', () => {
    expect(thrown(() => parseRunOptions({ outTable: 'a.b.c' }, 'score', 'flags'), UsageError).message).toMatch(
      /^score: --out-table: the name: 'a\.b\.c' is not a table name/,
    );
    const err = thrown(() => parseRunOptions({ outTable: 't', outDatabase: 'postgresql://u:hunter2@h/db' }, 'score', 'flags'), UsageError);
    expect(err.message).toMatch(/^score: --out-database: database URL postgresql:\/\/u@h\/db carries a password/);
    expect(err.message).not.toContain('hunter2');
  });

  it('puts the runs table in the out-table schema unless told otherwise', () => {
    const target = (options: RunOptionsInput) => tableTarget('in.csv', parseRunOptions({ outTable: 'Sales."Q1 Scores"', outDatabase: DB, ...options }));
    expect(target({})).toEqual({
      database: { host: 'db', port: 5432, database: 'analytics', user: 'scorer' },
      table: { schema: 'sales', table: 'Q1 Scores' },
      runsTable: { schema: 'sales', table: 'batch_scorer_runs' },
    });
    expect(target({ runsTable: 'audit' })?.runsTable).toEqual({ schema: 'sales', table: 'audit' });
    expect(target({ runsTable: 'ops.audit' })?.runsTable).toEqual({ schema: 'ops', table: 'audit' });
  });
});

describe("the out-table's columns", () => {
  const probe = {
    rental_price: 1234.5,
    rental_price_confidence: 0.9,
    rental_price_min: 1000,
    rental_price_max: 1500,
    rental_price_anomaly: null,
    rental_price_explain: '{}',
    churn: 'yes',
    churn_confidence: 0.7,
    churn_explain: '{}',
  };
  const schema = buildOutputSchema(['rental_price', 'churn'], probe, ['sqft', 'location'], ['value', 'confidence', 'interval', 'anomaly', 'explain']);

  it('types predictions by member: numbers double precision, classes text, anomaly boolean, explain jsonb', () => {
    expect(planTableColumns({}, ['sqft', 'location'], true, schema, probe)).toEqual([
      { name: 'row_number', type: 'bigint' },
      { name: 'sqft', type: 'text' },
      { name: 'location', type: 'text' },
      { name: 'rental_price', type: 'double precision' },
      { name: 'rental_price_confidence', type: 'double precision' },
      { name: 'rental_price_min', type: 'double precision' },
      { name: 'rental_price_max', type: 'double precision' },
      { name: 'rental_price_anomaly', type: 'boolean' },
      { name: 'rental_price_explain', type: 'jsonb' },
      { name: 'churn', type: 'text' },
      { name: 'churn_confidence', type: 'double precision' },
      { name: 'churn_explain', type: 'jsonb' },
    ]);
  });

  it("types input columns by the input's declared types, else by their Parquet types, else as text", () => {
    const columns = planTableColumns({ types: { sqft: 'int64', location: 'string' } }, ['sqft', 'location'], false, schema, probe);
    expect(columns.slice(0, 2)).toEqual([
      { name: 'sqft', type: 'bigint' },
      { name: 'location', type: 'text' },
    ]);
    const declared = planTableColumns({ types: { sqft: 'int64' } }, ['sqft', 'location'], false, schema, probe, {
      sqft: 'numeric(10,2)',
      location: 'character varying(40)',
    });
    expect(declared.slice(0, 2)).toEqual([
      { name: 'sqft', type: 'numeric(10,2)' },
      { name: 'location', type: 'character varying(40)' },
    ]);
  });

  it('refuses a column name PostgreSQL would cut, or one of the staging table', () => {
    const long = 'x'.repeat(64);
    expect(thrown(() => planTableColumns({}, [long], false, schema, probe), UsageError).message).toMatch(
      /^--out-table: a column: 'x+' is not a PostgreSQL name: at most 63 bytes/,
    );
    expect(thrown(() => planTableColumns({}, ['batch_scorer_part'], false, schema, probe), UsageError).message).toContain('--drop-columns batch_scorer_part');
  });
});
