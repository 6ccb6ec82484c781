import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { DATABASE_URL, privateSchema, type PrivateSchema } from '../helpers/postgres.js';
import { rentalsTable } from '../helpers/rentals-table.js';
import { corrected, useRescoreFixture } from '../helpers/rescore.js';
import { count, stagingTables } from '../helpers/table-rows.js';

// `rescore` of a run that read a PostgreSQL table: errors.jsonl holds the rows as read (typed
// values), and the rows corrected in a copy of it are sent and written as a run over the corrected
// table sends and writes them: predictions.csv byte for byte, an out-table row for row. Real
// PostgreSQL, the simulator over HTTP.

const ROWS = 2_000;
/** 1% of the rows (by key): the engine refuses them for their location until corrected. */
const BAD_IDS = 'id % 100 = 38';
const BAD = ROWS / 100;
const OPTIONS = ['--segment-rows', '500', '--batch-size', '200'];
const f = useRescoreFixture(OPTIONS);

/**
 * The sample rentals (see rentalsTable) with columns of more types beside them, NULL now and then,
 * and the location the engine refuses in 1% of the rows: errors.jsonl holds each type's JSON value.
 */
async function typedRentals(db: PrivateSchema): Promise<string> {
  const table = await rentalsTable(db, 'rentals', ROWS);
  await db.sql(
    `ALTER TABLE ${table} ADD COLUMN furnished boolean, ADD COLUMN listed_at timestamptz, ADD COLUMN deposit numeric(10,2), ADD COLUMN extras jsonb, ADD COLUMN account int8`,
  );
  await db.sql(
    `UPDATE ${table} SET furnished = id % 3 = 0, listed_at = timestamptz '2026-01-01 00:00:00.25+00' + id * interval '61 minutes',
       deposit = CASE WHEN id % 13 = 0 THEN NULL ELSE id * 1.25 END, extras = jsonb_build_object('floor', id % 7, 'tags', jsonb_build_array('a', id)),
       account = 9007199254740993 + id`,
  );
  await db.sql(`UPDATE ${table} SET location = $1 WHERE ${BAD_IDS}`, [ENGINE_ERROR_VALUE]);
  return table;
}

/** A table's rows in key order, each value as pg types it. */
const rowsOf = (db: PrivateSchema, table: string) => db.sql(`SELECT * FROM ${table} ORDER BY id`);

describe('rescore of a run that read a PostgreSQL table', () => {
  it('--rows: sends only the corrected rows; predictions.csv and the out-table are those of a run of the corrected table', async () => {
    const db = await privateSchema();
    const table = await typedRentals(db);
    const scores = `${db.name}.scores`;
    // Scores run two at a time; rescores one at a time, so that the simulator's count of rows received is each one's.
    const [run] = await Promise.all([
      f.score(DATABASE_URL, 'db-run', ['--table', table]),
      f.score(DATABASE_URL, 'db-tbl-run', ['--table', table, '--out-table', scores]),
    ]);
    expect(run.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS - BAD, rowsQuarantined: BAD });
    expect(await count(db, scores)).toBe(ROWS - BAD);

    // errors.jsonl holds each row as read: typed values, an int8 past 2^53 as its digits.
    const errors = (await readFile(join(f.out, 'db-run', 'errors.jsonl'), 'utf8')).split('\n').filter((l) => l !== '');
    expect(errors).toHaveLength(BAD);
    const first = JSON.parse(errors[0]) as { row: number; line: number; input: Record<string, unknown> };
    expect(first).toMatchObject({ row: 38, line: 38 });
    expect(first.input).toMatchObject({
      id: 38,
      sqft: expect.any(Number) as number,
      location: ENGINE_ERROR_VALUE,
      furnished: false,
      listed_at: '2026-01-02T14:38:00.25Z',
      deposit: 47.5,
      extras: { tags: ['a', 38], floor: 3 },
      account: '9007199254741031',
    });

    const sent: number[] = [];
    for (const runId of ['db-run', 'db-tbl-run']) {
      const rows = await f.editedErrors(runId, `${runId}-corrected.jsonl`, corrected);
      const r = await f.cli(['rescore', runId, '--out', f.out, '--rows', rows, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ runId: `${runId}.rescore-1`, patches: runId, rowsSent: BAD, rowsScored: BAD, rowsQuarantinedAgain: 0 });
      sent.push(r.rowsSent);
    }
    expect(sent).toEqual([BAD, BAD]);

    // The corrected table, scored anew: the same bytes, the same rows.
    await db.sql(`UPDATE ${table} SET location = 'good' WHERE ${BAD_IDS}`);
    await Promise.all([
      f.score(DATABASE_URL, 'db-corrected', ['--table', table]),
      f.score(DATABASE_URL, 'db-tbl-corrected', ['--table', table, '--out-table', `${db.name}.reference`]),
    ]);
    const [patched, reference] = await Promise.all(['db-run.rescore-1', 'db-corrected'].map((id) => readFile(join(f.out, id, 'predictions.csv'))));
    expect(patched.equals(reference)).toBe(true);
    expect((await f.manifest('db-run.rescore-1')).outputs.find((o) => o.file === 'predictions.csv')?.rows).toBe(ROWS);
    const [patchedRows, referenceRows] = await Promise.all([rowsOf(db, scores), rowsOf(db, `${db.name}.reference`)]);
    expect(patchedRows).toHaveLength(ROWS);
    expect(patchedRows).toEqual(referenceRows);
    expect(await stagingTables(db)).toEqual([]);

    // The versions' manifests: the patched run's database input, and every row scored.
    for (const runId of ['db-run.rescore-1', 'db-tbl-run.rescore-1']) {
      const manifest = await f.manifest(runId);
      expect(manifest).toMatchObject({ state: 'succeeded', counts: { rowsIn: ROWS, rowsScored: ROWS, rowsQuarantined: 0 } });
      expect(manifest.database).toEqual(run.database);
      expect(manifest.input).toEqual(run.input);
      expect(await readFile(join(f.out, runId, 'errors.jsonl'), 'utf8')).toBe('');
    }
    expect((await readdir(join(f.out, 'db-tbl-run.rescore-1'))).sort()).toEqual(['_SUCCESS', 'describe.json', 'errors.jsonl', 'manifest.json']);
  });

  it('refuses, before anything is sent, a --rows line with a column the run has not, a value of another type, or another key, naming the line and column', async () => {
    const db = await privateSchema();
    const table = await typedRentals(db);
    await f.score(DATABASE_URL, 'db-refused', ['--table', table, '--limit', '400']);
    const refused = async (name: string, edit: (line: string) => string) => {
      const rows = await f.editedErrors('db-refused', name, (line, k) => (k === 2 ? edit(corrected(line)) : corrected(line)));
      const r = await f.cli(['rescore', 'db-refused', '--out', f.out, '--rows', rows]);
      expect(r.code).toBe(2);
      expect(r.rowsSent).toBe(0);
      expect(r.stderr).toContain('[E_USAGE]');
      return r.stderr.replace(`--rows ${rows}: `, '--rows <file>: ');
    };
    // A run whose manifest keeps no types of its columns (finished before rescore took them): its copy, so edited.
    const old = join(f.out, 'db-old');
    await cp(join(f.out, 'db-refused'), old, { recursive: true });
    const manifest = await f.manifest('db-refused');
    delete manifest.layout?.types;
    await writeFile(join(old, 'manifest.json'), JSON.stringify({ ...manifest, runId: 'db-old' }));
    // At once: none sends a row, so the simulator's count stays each one's.
    const [unknown, type, bool, key, untyped] = await Promise.all([
      refused('unknown.jsonl', (line) => line.replace('"location":', '"locaton":')),
      refused('type.jsonl', (line) => line.replace(/"sqft":\d+/, '"sqft":"large"')),
      refused('bool.jsonl', (line) => line.replace('"furnished":false', '"furnished":"no"')),
      refused('key.jsonl', (line) => line.replace('"id":238', '"id":239')),
      f.cli(['rescore', 'db-old', '--out', f.out]),
    ]);
    expect(unknown).toContain(`--rows <file>: line 3 (row 238): "input" has a column "locaton" the run's rows do not (id, listing_id,`);
    expect(type).toContain(`--rows <file>: line 3 (row 238): column "sqft" holds "large", where the run read an integer (or null)`);
    expect(bool).toContain('line 3 (row 238): column "furnished" holds "no", where the run read true or false (or null)');
    expect(key).toContain(`line 3 (row 238): column "id" is the run's key (--segment-by): its value 238 places the row among the others`);
    expect(untyped.code).toBe(2);
    expect(untyped.stderr).toContain(`run db-old read the database ${DATABASE_URL}, and its manifest keeps no types of its columns`);
    expect(untyped.stderr).toContain('[E_RUN_STATE]');
    await expect(readdir(join(f.out, 'db-refused.rescore-1'))).rejects.toThrow();
  });
});
