import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { serviceClientFactory } from '../../src/app/service-clients.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import { parseRunOptions } from '../../src/config/run-options.js';
import { formatDatabaseUrl, parseDatabaseUrl } from '../../src/database/index.js';
import { BatchScorerError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { readManifest } from '../../src/scoring/manifest.js';
import { rescoreRun } from '../../src/scoring/rescore.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { formatLocation, parseLocation } from '../../src/storage/location.js';
import { MemoryStorage } from '../helpers/memory-storage.js';
import { DATABASE_URL, privateSchema, type PrivateSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/queue.js';
import { rejection } from '../helpers/rejection.js';
import { corrected, RESCORE_MODEL, useRescoreFixture } from '../helpers/rescore.js';
import { rentalsText } from '../helpers/scoring.js';
import { count, stagingTables } from '../helpers/table-rows.js';

// `rescore` of a run that wrote into a table (--out-table): the rows it scores are added to that
// table, once, in the transaction that records the new version in the runs table; the table is
// then what a run of the corrected input writes. Real PostgreSQL, the simulator over HTTP.

const ROWS = 2_000;
/** 1% of the rows: the engine refuses them for their location until corrected. */
const isBad = (i: number) => i % 100 === 37;
const BAD = ROWS / 100;
const OPTIONS = ['--segment-rows', '500', '--batch-size', '200', '--row-number', '--out-database', DATABASE_URL];
const f = useRescoreFixture(OPTIONS);
let input: string;
let correctedInput: string;

beforeAll(async () => {
  input = join(f.dir, 'rentals.csv');
  correctedInput = join(f.dir, 'rentals-corrected.csv');
  const edit = (fix: boolean) => (row: Record<string, string>, i: number) => void (isBad(i) && (row.location = fix ? 'good' : ENGINE_ERROR_VALUE));
  await writeFile(input, rentalsText(ROWS, edit(false)));
  await writeFile(correctedInput, rentalsText(ROWS, edit(true)));
});

/** A table's rows in row_number order, each value as pg types it (numbers, booleans, bigint as text). */
const rowsOf = (db: PrivateSchema, table: string) => db.sql(`SELECT * FROM ${table} ORDER BY row_number`);

/** The runs table's records: which run, how many rows into which table, and the run each patched. */
const records = (db: PrivateSchema) =>
  db.sql<{ run_id: string; rows: number; out_table: string; patches: string | null }>(
    `SELECT run_id, rows::int, out_table, manifest->'patches'->>'runId' AS patches FROM ${db.name}.batch_scorer_runs ORDER BY run_id`,
  );

describe('rescore of a run that wrote into a table', () => {
  it('--rows: adds only the corrected rows, once, and the table is a run of the corrected file', async () => {
    const db = await privateSchema();
    const scores = `${db.name}.scores`;
    await f.score(input, 'tbl-run', ['--out-table', scores]);
    expect(await count(db, scores)).toBe(ROWS - BAD);
    const rows = await f.editedErrors('tbl-run', 'tbl-corrected.jsonl', corrected);
    const r = await f.cli(['rescore', 'tbl-run', '--out', f.out, '--rows', rows, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.rowsSent).toBe(BAD);
    const target = { database: formatDatabaseUrl(parseDatabaseUrl(DATABASE_URL)), table: scores, runsTable: `${db.name}.batch_scorer_runs`, rows: BAD };
    expect(JSON.parse(r.stdout)).toMatchObject({ runId: 'tbl-run.rescore-1', patches: 'tbl-run', rowsSent: BAD, rowsScored: BAD, table: target });

    await f.score(correctedInput, 'tbl-corrected', ['--out-table', `${db.name}.reference`]);
    const [patched, reference] = await Promise.all([rowsOf(db, scores), rowsOf(db, `${db.name}.reference`)]);
    expect(patched).toHaveLength(ROWS);
    expect(patched).toEqual(reference);
    expect(await records(db)).toEqual([
      { run_id: 'tbl-corrected', rows: ROWS, out_table: `${db.name}.reference`, patches: null },
      { run_id: 'tbl-run', rows: ROWS - BAD, out_table: scores, patches: null },
      { run_id: 'tbl-run.rescore-1', rows: BAD, out_table: scores, patches: 'tbl-run' },
    ]);
    expect(await stagingTables(db)).toEqual([]);

    // The version's folder: its manifest, the run's describe.json, errors.jsonl (every row came home), _SUCCESS.
    const folder = join(f.out, 'tbl-run.rescore-1');
    expect((await readdir(folder)).sort()).toEqual(['_SUCCESS', 'describe.json', 'errors.jsonl', 'manifest.json']);
    expect(await readFile(join(folder, 'errors.jsonl'), 'utf8')).toBe('');
    const manifest = await f.manifest('tbl-run.rescore-1');
    expect(manifest).toMatchObject({
      state: 'succeeded',
      table: target,
      counts: { rowsIn: ROWS, rowsScored: ROWS, rowsQuarantined: 0 },
      patches: { runId: 'tbl-run', counts: { rowsIn: BAD, rowsScored: BAD, rowsQuarantined: 0 } },
    });
    expect(manifest.outputs.map((o) => o.file)).toEqual(['errors.jsonl']);

    // The same rescore again: its rows are in the table, and it adds nothing.
    const again = await f.cli(['rescore', 'tbl-run', '--out', f.out, '--rows', rows]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('run tbl-run was patched already by run tbl-run.rescore-1, published into');
    expect(again.stderr).toContain(`patch that version instead (batch-scorer rescore tbl-run.rescore-1 --out ${f.out}) [E_RUN_CONFLICT]`);
    expect(again.rowsSent).toBe(0);
    expect(await count(db, scores)).toBe(ROWS);
  });

  it('a publish that fails adds nothing and leaves no staging table; the rescore done again adds the rows once', async () => {
    const db = await privateSchema();
    const scores = `${db.name}.scores`;
    await f.score(input, 'fail-run', ['--out-table', scores]);
    const rows = await f.editedErrors('fail-run', 'fail-corrected.jsonl', corrected);
    await db.sql(`CREATE FUNCTION ${db.name}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'closed for loading'; END $$`);
    await db.sql(`CREATE TRIGGER closed BEFORE INSERT ON ${scores} FOR EACH STATEMENT EXECUTE FUNCTION ${db.name}.refuse()`);
    const failed = await f.cli(['rescore', 'fail-run', '--out', f.out, '--rows', rows]);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain(`publishing ${BAD} rows into ${scores}: closed for loading`);
    expect(await count(db, scores)).toBe(ROWS - BAD);
    expect((await records(db)).map((r) => r.run_id)).toEqual(['fail-run']);
    expect(await stagingTables(db)).toEqual([]);
    expect((await f.manifest('fail-run.rescore-1')).state).toBe('failed');

    await db.sql(`DROP TRIGGER closed ON ${scores}`);
    const r = await f.cli(['rescore', 'fail-run', '--out', f.out, '--rows', rows]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('run fail-run.rescore-2 patched run fail-run');
    expect(await count(db, scores)).toBe(ROWS);
    expect(Number((await db.sql<{ n: string }>(`SELECT count(DISTINCT row_number) AS n FROM ${scores}`))[0].n)).toBe(ROWS);
  });

  it('a rescore retried after its publish committed adds nothing more, and finishes its run folder', async () => {
    const db = await privateSchema();
    const scores = `${db.name}.scores`;
    // In memory, so that the version's manifest.json can fail to be written right after its publish committed.
    const storage = new MemoryStorage();
    await storage.write(parseLocation('/memory/in/rentals.csv'), await readFile(input));
    const ctx = { storage, log: silentLogger, predictorFor: serviceClientFactory(new Map(), DEFAULT_LIMITS), limits: DEFAULT_LIMITS };
    const options = { segmentRows: 500, batchSize: 200, rowNumber: true, outTable: scores, outDatabase: DATABASE_URL, service: f.sim.url, runId: 'crash-run' };
    await scoreRun({ input: '/memory/in/rentals.csv', out: '/memory/out', model: RESCORE_MODEL, options: parseRunOptions(options) }, ctx);
    const errors = await storage.readText(parseLocation('/memory/out/crash-run/errors.jsonl'));
    await storage.write(parseLocation('/memory/in/fixed.jsonl'), errors.split('\n').map(corrected).join('\n'));
    const request = { runId: 'crash-run', out: '/memory/out', rows: '/memory/in/fixed.jsonl' };
    const sent = async (work: Promise<unknown>) => {
      const before = f.sim.stats.predictRowsReceived;
      await work.catch(() => undefined);
      return f.sim.stats.predictRowsReceived - before;
    };

    storage.failWrites((loc) => formatLocation(loc) === '/memory/out/crash-run.rescore-1/manifest.json');
    const crashed = rescoreRun(request, ctx);
    expect(await sent(crashed)).toBe(BAD);
    const err = await rejection(crashed, BatchScorerError);
    const finish = 'batch-scorer rescore crash-run --out /memory/out --run-id crash-run.rescore-1';
    expect(err.message).toContain(`the rows are in ${scores} already: finish the run folder with ${finish}`);
    storage.failWrites(undefined);
    expect(await count(db, scores)).toBe(ROWS);
    expect(await storage.exists(parseLocation('/memory/out/crash-run.rescore-1/_SUCCESS'))).toBe(false);

    // Done again under a new id: refused, nothing sent, and told how to finish the version.
    const again = rescoreRun(request, ctx);
    expect(await sent(again)).toBe(0);
    const refused = await rejection(again, BatchScorerError);
    expect(refused.code).toBe('E_RUN_CONFLICT');
    expect(refused.message).toContain(`its run folder /memory/out/crash-run.rescore-1 did not finish: finish it with ${finish}`);

    // Under its own id: the folder is finished from what the runs table recorded; nothing is sent or added.
    const finishing = rescoreRun({ ...request, newRunId: 'crash-run.rescore-1' }, ctx);
    expect(await sent(finishing)).toBe(0);
    const manifest = await finishing;
    expect(manifest).toMatchObject({ runId: 'crash-run.rescore-1', state: 'succeeded', patches: { runId: 'crash-run' }, table: { table: scores, rows: BAD } });
    expect(await count(db, scores)).toBe(ROWS);
    const folder = storage.keys().filter((k) => k.startsWith('/memory/out/crash-run.rescore-1/'));
    expect(folder.map((k) => k.slice('/memory/out/crash-run.rescore-1/'.length))).toEqual(['_SUCCESS', 'describe.json', 'errors.jsonl', 'manifest.json']);
    expect(await readManifest(storage, parseLocation('/memory/out/crash-run.rescore-1'))).toEqual(manifest);

    const finished = await rejection(rescoreRun({ ...request, newRunId: 'crash-run.rescore-1' }, ctx), BatchScorerError);
    expect(finished.code).toBe('E_RUN_EXISTS');
    expect(await count(db, scores)).toBe(ROWS);
  });

  it('two rescores of one run publishing at once: one adds its rows, the other is refused', async () => {
    const db = await privateSchema();
    const scores = `${db.name}.scores`;
    await f.score(input, 'race-run', ['--out-table', scores, '--limit', '500']);
    const rows = await f.editedErrors('race-run', 'race-corrected.jsonl', corrected);
    // The out-table is held by a transaction of the test's own until both rescores wait inside their publish.
    const holder = new pg.Client({ connectionString: DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${scores} IN SHARE MODE`);
      const both = Promise.all(['a', 'b'].map((id) => f.cli(['rescore', 'race-run', '--out', f.out, '--rows', rows, '--run-id', `race-${id}`])));
      const waiting = `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'batch-scorer' AND wait_event_type = 'Lock'`;
      await waitFor('both rescores to wait inside their publish', async () => Number((await db.sql<{ n: string }>(waiting))[0].n) === 2);
      await holder.query('ROLLBACK');
      const [a, b] = await both;
      expect([a.code, b.code].sort()).toEqual([0, 2]);
      expect((a.code === 2 ? a : b).stderr).toMatch(/run race-run was patched already by run race-[ab], .*\[E_RUN_CONFLICT\]/);
    } finally {
      await holder.end();
    }
    expect(await count(db, scores)).toBe(500);
    expect((await records(db)).map((r) => r.patches).sort()).toEqual([null, 'race-run']);
    expect(await stagingTables(db)).toEqual([]);
  });

  it('refuses, before anything is sent, a database OUTPUT_ROOTS does not list, and a table changed or dropped since, naming it', async () => {
    const db = await privateSchema();
    const scores = `${db.name}.scores`;
    await f.score(input, 'changed-run', ['--out-table', scores, '--limit', '200']);
    const rescore = (env: Record<string, string> = {}) => f.cli(['rescore', 'changed-run', '--out', f.out, '--service', f.sim.url], f.sim, env);

    const policed = await rescore({ OUTPUT_ROOTS: f.out });
    expect(policed.stderr).toContain(`--out-database ${formatDatabaseUrl(parseDatabaseUrl(DATABASE_URL))} is not allowed: OUTPUT_ROOTS lists no database`);
    expect(policed.stderr).toContain('[E_NOT_ALLOWED]');

    await db.sql(`ALTER TABLE ${scores} ALTER COLUMN rental_price_max TYPE integer`);
    const changed = await rescore();
    expect(changed.stderr).toContain(
      `--out-table ${scores}: column "rental_price_max" is integer, which does not hold the double precision values the run writes`,
    );
    expect(changed.stderr).toContain('[E_DATABASE_REFUSED]');

    await db.sql(`DROP TABLE ${scores}`);
    const dropped = await rescore();
    expect(dropped.stderr).toContain(
      `--out-table ${scores} does not exist in ${formatDatabaseUrl(parseDatabaseUrl(DATABASE_URL))} (dropped since its rows were published?)`,
    );
    expect(await db.sql(`SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'scores'`, [db.name])).toEqual([]);

    for (const r of [policed, changed, dropped]) {
      expect(r.code).toBe(2);
      expect(r.rowsSent).toBe(0);
    }
    await expect(readdir(join(f.out, 'changed-run.rescore-1'))).rejects.toThrow();
  });
});
