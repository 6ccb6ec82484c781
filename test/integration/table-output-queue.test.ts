import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ensureRunsTable } from '../../src/database/index.js';
import { DATABASE_URL, privateSchema, type PrivateSchema } from '../helpers/postgres.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { score, useRentalsInput } from '../helpers/scoring.js';
import { expectTableMatchesCsv } from '../helpers/table-rows.js';

// Queue runs into a table with real worker processes: each input row lands once, whichever worker
// dies where, and the table holds what predictions.csv of the same run holds.

const ROWS = 3_000;
const files = useRentalsInput(ROWS);
const f = useQueueFixture();
const OPTIONS = { segmentRows: 250, batchSize: 50, rowNumber: true };

/** Enqueues run `runId` of the rentals into `table`, its run folder under `<tmp>/<runId>`. */
async function enqueueInto(table: string, runId: string): Promise<{ runId: string; out: string }> {
  const out = join(files.dir, runId);
  const options = { ...OPTIONS, service: f.sim.url, runId, outTable: table, outDatabase: DATABASE_URL };
  await f.queue.enqueue({ input: files.input, model: 'mindsdb/home_rentals_model', out, options });
  return { runId, out };
}

const count = async (db: PrivateSchema, sql: string) => Number((await db.sql<{ n: string }>(sql))[0].n);

/** Exactly one row per input row, with the values of a `score` of the same input into files. */
async function expectOnce(db: PrivateSchema, table: string, name: string): Promise<void> {
  expect(await count(db, `SELECT count(*) AS n FROM ${table}`)).toBe(ROWS);
  expect(await count(db, `SELECT count(DISTINCT row_number) AS n FROM ${table}`)).toBe(ROWS);
  const out = join(files.dir, `direct-${name}`);
  await score(files.input, out, { ...OPTIONS, service: f.sim.url, runId: 'd' });
  await expectTableMatchesCsv(db, table, await readFile(join(out, 'd', 'predictions.csv'), 'utf8'));
  expect(await count(db, `SELECT count(*) AS n FROM pg_tables WHERE schemaname = '${db.name}' AND tablename LIKE 'batch_scorer_stage%'`)).toBe(0);
}

describe('queue runs into a table', () => {
  it('two workers, one SIGKILLed mid-run and another started: every row lands once, as predictions.csv has it', async () => {
    await f.setup({ latencyMs: 10 });
    const db = await privateSchema();
    const table = `${db.name}.scores`;
    const victim = f.worker(['--segments', '2']);
    f.worker(['--segments', '2']);
    const { runId, out } = await enqueueInto(table, 'killed');
    const segments = join(out, runId, '_work', 'segments');
    const done = async () => (existsSync(segments) ? (await readdir(segments)).filter((name) => name.endsWith('.done.json')).length : 0);
    await waitFor('3 segments done', async () => (await done()) >= 3);
    victim.child.kill('SIGKILL');
    await victim.exited;
    f.worker(['--segments', '2']);
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    await expectOnce(db, table, 'killed');
    const manifest = JSON.parse(await readFile(join(out, runId, 'manifest.json'), 'utf8')) as { table: unknown };
    expect(manifest.table).toMatchObject({ table, rows: ROWS });
    expect(await count(db, `SELECT count(*) AS n FROM ${db.name}.batch_scorer_runs WHERE run_id = 'killed'`)).toBe(1);
  });

  it('a worker SIGKILLed inside the publishing transaction, its rows staged: the next worker publishes them once', async () => {
    await f.setup();
    const db = await privateSchema();
    const table = `${db.name}.scores`;
    // The runs table is held for a while by a transaction of the test's own: the worker stages every
    // row, then waits inside its publishing transaction to record the run.
    const holder = new pg.Client({ connectionString: DATABASE_URL });
    await holder.connect();
    try {
      const runsTable = { schema: db.name, table: 'batch_scorer_runs' };
      await ensureRunsTable(holder, runsTable);
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${db.name}.batch_scorer_runs IN EXCLUSIVE MODE`);
      const victim = f.worker();
      const { runId } = await enqueueInto(table, 'publish');
      await waitFor(
        'the worker to wait inside its publish',
        async () =>
          (await count(
            db,
            `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'batch-scorer' AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "${db.name}"."batch_scorer_runs"%'`,
          )) === 1,
      );
      const staged = await db.sql<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'batch_scorer_stage%'`, [
        db.name,
      ]);
      expect(await count(db, `SELECT count(*) AS n FROM ${db.name}."${staged[0].name}"`)).toBe(ROWS);
      victim.child.kill('SIGKILL');
      await victim.exited;
      await holder.query('ROLLBACK');
      // The dead worker's transaction never committed: nothing is in the table yet.
      expect(await count(db, `SELECT count(*) AS n FROM ${table}`)).toBe(0);
      f.worker();
      const status = await f.finished(runId);
      expect(status.state).toBe('succeeded');
      await expectOnce(db, table, 'publish');
      expect(await count(db, `SELECT count(*) AS n FROM ${db.name}.batch_scorer_runs WHERE run_id = 'publish'`)).toBe(1);
    } finally {
      await holder.end();
    }
  });
});
