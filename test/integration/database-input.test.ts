import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { runCli } from '../helpers/cli.js';
import { DATABASE_URL, privateSchema } from '../helpers/postgres.js';
import { rejection } from '../helpers/rejection.js';
import { exportCsv, rentalsTable } from '../helpers/rentals-table.js';
import { runFolder, score, useScoringFixture } from '../helpers/scoring.js';

const fixture = useScoringFixture();

const ROWS = 1_000;
const failure = (p: Promise<unknown>) => rejection(p, BatchScorerError);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The predictions.csv of a `score` of `input` (in this process) into a folder of its own, and its manifest. */
async function scored(input: string, runId: string, options: Record<string, unknown> = {}): Promise<{ predictions: string; manifest: Manifest }> {
  const out = join(fixture.dir, runId);
  await score(input, out, { service: fixture.sim.url, runId, batchSize: 60, ...options });
  const files = await runFolder(out, runId);
  return { predictions: files['predictions.csv'], manifest: JSON.parse(files['manifest.json']) as Manifest };
}

/** The same rows exported to CSV (`COPY ... TO STDOUT CSV HEADER`), scored as a file. */
async function scoredExport(query: string, runId: string): Promise<string> {
  const file = join(fixture.dir, `${runId}.csv`);
  await writeFile(file, await exportCsv(query));
  return (await scored(file, runId)).predictions;
}

describe('a PostgreSQL table or query as the input of score', () => {
  it('scores a table by its primary key into the bytes a score of its CSV export writes, segment by segment', async () => {
    const s = await privateSchema();
    // Keys with gaps and out of insertion order: segments are ranges of key values, rows go in key order.
    const table = await rentalsTable(s, 'rentals', ROWS, (i) => (ROWS - i) * 7);
    const fromTable = await scored(DATABASE_URL, 'table', { table, segmentRows: 300, segmentsAtOnce: 3 });
    expect(fromTable.predictions).toBe(await scoredExport(`SELECT * FROM ${table} ORDER BY id`, 'table-export'));
    expect(fromTable.predictions.split('\n')[0]).toBe(
      'id,listing_id,number_of_rooms,number_of_bathrooms,sqft,location,days_on_market,initial_price,neighborhood,notes,rental_price,rental_price_confidence,rental_price_min,rental_price_max,rental_price_anomaly',
    );

    const { manifest } = fromTable;
    expect(manifest.state).toBe('succeeded');
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS, segments: 4 });
    expect(manifest.inputs).toEqual([]);
    const database = manifest.database!;
    expect(database).toMatchObject({ url: DATABASE_URL, table, query: null, key: 'id' });
    // The n-th key is 7n: each range ends at the first key of the next.
    expect(database.segments.map(({ from, to, rows }) => ({ from, to, rows }))).toEqual([
      { from: null, to: '2107', rows: 300 },
      { from: '2107', to: '4207', rows: 300 },
      { from: '4207', to: '6307', rows: 300 },
      { from: '6307', to: null, rows: 100 },
    ]);
    expect(database.segments.every((seg) => /^[0-9a-f]{64}$/.test(seg.sha256 ?? ''))).toBe(true);
    expect(database.sha256).toBe(sha256(database.segments.map((s) => `${s.sha256}\n`).join('')));
    expect(manifest.input).toMatchObject({ location: DATABASE_URL, format: 'postgresql', rows: ROWS, sha256: database.sha256 });
  });

  it('scores a query by the column --segment-by names, and a canary of its first rows by key with --limit', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', ROWS);
    const query = `SELECT listing_id, sqft, location, number_of_rooms, number_of_bathrooms, initial_price, days_on_market, neighborhood FROM ${table} WHERE id % 3 <> 0`;
    const fromQuery = await scored(DATABASE_URL, 'query', { query, segmentBy: 'listing_id', segmentRows: 250 });
    expect(fromQuery.predictions).toBe(await scoredExport(`${query} ORDER BY listing_id`, 'query-export'));
    expect(fromQuery.manifest.database).toMatchObject({ table: null, query, key: 'listing_id' });
    expect(fromQuery.manifest.counts?.segments).toBe(3);

    const canary = await scored(DATABASE_URL, 'canary', { query, segmentBy: 'listing_id', segmentRows: 40, limit: 100 });
    expect(canary.predictions).toBe(fromQuery.predictions.split('\n').slice(0, 101).join('\n') + '\n');
    expect(canary.manifest.database?.segments.map((seg) => seg.rows)).toEqual([40, 40, 20]);
    // The canary's last range ends where its rows do, at the key after them.
    expect(canary.manifest.database?.segments.at(-1)?.to).toBe('L00000150');
  });

  it('gives the same checksums whatever the segments were read by, and others for other rows', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', 400);
    const once = (await scored(DATABASE_URL, 'sum-a', { table, segmentRows: 100, segmentsAtOnce: 1 })).manifest;
    const again = (await scored(DATABASE_URL, 'sum-b', { table, segmentRows: 100, segmentsAtOnce: 4, batchSize: 7 })).manifest;
    expect(again.database).toEqual(once.database);
    await s.sql(`UPDATE ${table} SET sqft = sqft + 1 WHERE id = 150`);
    const changed = (await scored(DATABASE_URL, 'sum-c', { table, segmentRows: 100 })).manifest.database!;
    // Only the segment holding the changed row reads other rows.
    expect(changed.segments.map((seg, i) => seg.sha256 === once.database!.segments[i].sha256)).toEqual([true, false, true, true]);
    expect(changed.sha256).not.toBe(once.database!.sha256);
  });

  it('fails a resumed segment whose key range gained a row since planning (E_INPUT_CHANGED), naming the range', async () => {
    const s = await privateSchema();
    // Keys 10, 20, ...: room for a row between any two.
    const table = await rentalsTable(s, 'rentals', 300, (i) => (i + 1) * 10);
    const out = join(fixture.dir, 'changed');
    const options = { service: fixture.sim.url, runId: 'changed', table, segmentRows: 100, segmentsAtOnce: 1, batchSize: 50 };
    // The cap stops the run once the first segment's rows are sent: the rest wait for a resume.
    const capped = await failure(score(DATABASE_URL, out, { ...options, maxRows: 100 }));
    expect(capped.code).toBe('E_EXPIRED');
    await s.sql(
      `INSERT INTO ${table} SELECT 2505, listing_id, number_of_rooms, number_of_bathrooms, sqft, location, days_on_market, initial_price, neighborhood, notes FROM ${table} WHERE id = 2500`,
    );
    const changed = await failure(score(DATABASE_URL, out, options));
    expect(changed.code).toBe('E_INPUT_CHANGED');
    expect(changed.message).toBe(
      `${DATABASE_URL} table ${table}: segment 2 (id from '2010' to the last) holds more than 100 rows where planning counted 100; the rows changed during the run: score it again with another --run-id once they are stable`,
    );
  });

  it('fails on a service that does not answer while the table is being planned, its planning stopped', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', 50);
    const out = join(fixture.dir, 'no-service');
    const err = await failure(score(DATABASE_URL, out, { service: 'http://127.0.0.1:9', runId: 'no-service', table }));
    expect(err.code).toBe('E_SERVICE_UNREACHABLE');
  });

  it('writes a table of typed columns into an out-table of the same types, every value as it was read', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', 300);
    await s.sql(`CREATE TYPE ${s.name}.mood AS ENUM ('calm', 'busy')`);
    await s.sql(`CREATE TABLE ${s.name}.typed AS SELECT id, number_of_rooms, number_of_bathrooms, (sqft + 0.25)::numeric(8,2) AS sqft, location,
      days_on_market::float8 AS days_on_market, initial_price::int8 AS initial_price, neighborhood, id % 2 = 0 AS even, DATE '2024-01-01' + id AS listed,
      TIMESTAMPTZ '2024-01-01 10:00+02' + id * INTERVAL '1 second' AS seen, jsonb_build_object('n', id, 'tags', jsonb_build_array('a', id)) AS meta,
      decode(lpad(to_hex(id), 4, '0'), 'hex') AS raw, (CASE WHEN id % 2 = 0 THEN 'calm' ELSE 'busy' END)::${s.name}.mood AS mood FROM ${table}`);
    await s.sql(`ALTER TABLE ${s.name}.typed ADD PRIMARY KEY (id)`);
    const out = `${s.name}.scored`;
    const manifest = await score(DATABASE_URL, join(fixture.dir, 'typed'), {
      service: fixture.sim.url,
      runId: 'typed',
      table: `${s.name}.typed`,
      segmentRows: 120,
      outTable: out,
    });
    expect(manifest).toMatchObject({ state: 'succeeded', table: { table: out, rows: 300 } });
    const types = await s.sql<{ name: string; type: string }>(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = '${out}'::regclass AND attnum > 0 ORDER BY attnum`,
    );
    expect(Object.fromEntries(types.slice(0, 14).map((t) => [t.name, t.type]))).toEqual({
      id: 'integer',
      number_of_rooms: 'integer',
      number_of_bathrooms: 'integer',
      sqft: 'numeric(8,2)',
      location: 'text',
      days_on_market: 'double precision',
      initial_price: 'bigint',
      neighborhood: 'text',
      even: 'boolean',
      listed: 'date',
      seen: 'timestamp with time zone',
      meta: 'jsonb',
      // Written as base64, and an enum of the input's database: text.
      raw: 'text',
      mood: 'text',
    });
    const same = await s.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${out} o JOIN ${s.name}.typed i USING (id) WHERE o.sqft = i.sqft AND o.days_on_market = i.days_on_market
       AND o.initial_price = i.initial_price AND o.even = i.even AND o.listed = i.listed AND o.seen = i.seen AND o.meta = i.meta
       AND decode(o.raw, 'base64') = i.raw AND o.mood = i.mood::text AND o.number_of_bathrooms IS NOT DISTINCT FROM i.number_of_bathrooms`,
    );
    expect(same).toEqual([{ n: 300 }]);
  });

  it('refuses a key that repeats or is NULL, naming the column and the value', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', 50);
    const repeated = await failure(scored(DATABASE_URL, 'repeated', { query: `SELECT * FROM ${table}`, segmentBy: 'number_of_rooms' }));
    expect(repeated.code).toBe('E_INPUT');
    expect(repeated.message).toMatch(
      /^--segment-by number_of_rooms: query 'SELECT \* FROM .*' has more than one row whose number_of_rooms is '1'; segments are ranges of a unique key: choose a unique column$/,
    );
    const nulls = await failure(
      scored(DATABASE_URL, 'nulls', { query: `SELECT id, CASE WHEN id > 40 THEN NULL ELSE id END AS k, sqft FROM ${table}`, segmentBy: 'k' }),
    );
    expect(nulls.code).toBe('E_INPUT');
    expect(nulls.message).toMatch(/^--segment-by k: query '.*' has rows whose k is NULL; segments are ranges of a key that is never NULL/);
    const noKey = await failure(scored(DATABASE_URL, 'no-key', { table: `${table}`, segmentBy: 'nope' }));
    expect(noKey.message).toMatch(/^--segment-by nope: table .* has no column nope; its columns are id, listing_id, /);
    await s.sql(`CREATE TABLE ${s.name}.keyless AS SELECT * FROM ${table}`);
    const keyless = await failure(scored(DATABASE_URL, 'keyless', { table: `${s.name}.keyless` }));
    expect(keyless.message).toBe(`--table ${s.name}.keyless has no primary key: name a unique, never NULL column with --segment-by`);
  });
});

describe('database inputs on the command line', () => {
  it('refuses a password in the URL, a query that writes, and options that do not fit the input, without touching the table', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', 20);
    const out = join(fixture.dir, 'cli');
    const run = (input: string, ...flags: string[]) =>
      runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--service', fixture.sim.url, ...flags], { LOG_LEVEL: 'warn' });

    const password = await run('postgresql://postgres:pa55-w0rd@127.0.0.1:5432/test', '--table', table);
    expect(password.code).toBe(2);
    expect(password.stderr).toMatch(/database URL postgresql:\/\/postgres@127\.0\.0\.1:5432\/test carries a password: remove it and set PGPASSWORD/);
    expect(password.stderr + password.stdout).not.toContain('pa55-w0rd');

    const deletes = await run(DATABASE_URL, '--query', `DELETE FROM ${table}`, '--segment-by', 'id');
    expect(deletes.code).toBe(2);
    expect(deletes.stderr).toContain('--query: must be one SELECT statement that only reads; it starts with DELETE');
    const drops = await run(DATABASE_URL, '--query', `SELECT * FROM ${table}; DROP TABLE ${table}`, '--segment-by', 'id');
    expect(drops.code).toBe(2);
    expect(drops.stderr).toMatch(/--query must be one statement: query 'SELECT \* FROM \S+; DROP TABLE \S+' has a ';' before its end \[E_USAGE\]/);
    expect(await s.sql(`SELECT count(*)::int AS n FROM ${table}`)).toEqual([{ n: 20 }]);

    const neither = await run(DATABASE_URL);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain(`${DATABASE_URL} is a database: name its rows with --table schema.table or --query 'SELECT ...'`);
    const both = await run(DATABASE_URL, '--table', table, '--query', 'SELECT 1 AS id');
    expect(both.stderr).toContain('--table and --query: give one of them, not both');
    const keyless = await run(DATABASE_URL, '--query', `SELECT * FROM ${table}`);
    expect(keyless.stderr).toContain('--query needs --segment-by <column>');
    const file = join(fixture.dir, 'rows.csv');
    await writeFile(file, 'a\n1\n');
    const forFiles = await run(file, '--table', table, '--segment-by', 'id');
    expect(forFiles.code).toBe(2);
    expect(forFiles.stderr).toContain(`--table, --segment-by: for a database input (postgresql://user@host:5432/db); ${file} is a file location`);
  });

  it('reads only the databases INPUT_ROOTS lists once it is set', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', 20);
    const out = join(fixture.dir, 'roots');
    const args = [
      'score',
      DATABASE_URL,
      '--table',
      table,
      '--model',
      'mindsdb/home_rentals_model',
      '--out',
      out,
      '--service',
      fixture.sim.url,
      '--run-id',
      'roots',
    ];
    const refused = await runCli(args, { INPUT_ROOTS: fixture.dir, OUTPUT_ROOTS: fixture.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `input ${DATABASE_URL} is not allowed: INPUT_ROOTS lists no database; read one it lists, or add it to INPUT_ROOTS [E_NOT_ALLOWED]`,
    );
    const allowed = await runCli(args, { INPUT_ROOTS: `${fixture.dir},postgresql://127.0.0.1:5432/test`, OUTPUT_ROOTS: fixture.dir });
    expect(allowed.stderr).not.toContain('E_NOT_ALLOWED');
    expect(allowed.code).toBe(0);
    const manifest = JSON.parse(await readFile(join(out, 'roots', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.counts).toMatchObject({ rowsIn: 20, rowsScored: 20 });
  });
});
