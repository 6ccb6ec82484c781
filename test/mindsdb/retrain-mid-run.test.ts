import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { startCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor } from '../helpers/queue.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { ENGINE, rentalsTrainingCsv, waitForVersions } from './models.js';
import { sqlDisagreements, sqlPredictions } from './sql-predictions.js';

// A model retrained on the real server while a run scores it. Each test trains a model of its
// own (version 1), and retrains it (version 2, made active by the server once trained) once the
// run has scored a segment. The run is paused until then, so that it ends after version 2 is
// active whatever the machine's speed: `score` by SIGSTOP (and SIGCONT), a queued run by its only
// worker leaving (SIGTERM) and another coming once the retrain is done.

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 1_000;
/** Ten segments of ten requests each, one request at a time: the run is still scoring when its first segment is done. */
const SLOW = { segmentRows: 100, batchSize: 10, concurrency: 1 };
const tag = randomBytes(4).toString('hex');
const files = { v1: `retrain_v1_${tag}`, v2: `retrain_v2_${tag}` };
const models: string[] = [];
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
let csv: string;

beforeAll(async () => {
  tmp = await tempDir();
  csv = rentalsText(ROWS);
  input = join(tmp.dir, 'rentals.csv');
  await writeFile(input, csv);
  // Two slices of rows priced by two formulas: the versions answer differently.
  await conn.uploadFile(files.v1, rentalsTrainingCsv(0, 400, 1));
  await conn.uploadFile(files.v2, rentalsTrainingCsv(5000, 400, 2));
});
afterAll(async () => {
  for (const m of models) await conn.sql(`DROP MODEL mindsdb.${m}`).catch(() => undefined);
  for (const f of Object.values(files)) await conn.sql(`DROP TABLE files.${f}`).catch(() => undefined);
  await tmp.cleanup();
});

/** A model of the test's own, version 1 trained and active. */
async function trainModel(name: string): Promise<void> {
  models.push(name);
  await conn.sql(`CREATE MODEL mindsdb.${name} FROM files (SELECT * FROM ${files.v1}) PREDICT rental_price USING engine='${ENGINE}'`);
  await waitForVersions(conn, name, 1);
}

/** Starts retraining the model as version 2: the server answers at once and trains meanwhile. */
async function startRetrain(name: string): Promise<void> {
  await conn.sql(`RETRAIN mindsdb.${name} FROM files (SELECT * FROM ${files.v2})`);
}

/** Waits until the server has trained version 2 and made it the active one. */
async function retrained(name: string): Promise<void> {
  await waitForVersions(conn, name, 2);
  const active = await conn.sql(`SELECT version FROM mindsdb.models WHERE name = '${name}' AND active = true`);
  expect(active.data).toEqual([[2]]);
}

/**
 * What a run of `name` pinned to version 1 and ended after version 2 became active must show:
 * every row version 1's SQL answer (which version 2's is not), the manifest pinned to 1 with a
 * warning naming both versions, and `log` a line saying so.
 */
async function expectPinnedThroughRetrain(name: string, folder: string, log: string): Promise<void> {
  const [v1, v2] = await Promise.all([sqlPredictions(conn, `${name}.1`, csv, 'listing_id'), sqlPredictions(conn, `${name}.2`, csv, 'listing_id')]);
  expect([...v1].filter(([id, a]) => a.rental_price !== v2.get(id)!.rental_price).length).toBeGreaterThan(ROWS * 0.95);
  const rows = parseCsv(await readFile(join(folder, 'predictions.csv'), 'utf8'));
  expect(rows).toHaveLength(ROWS);
  expect(sqlDisagreements(rows, v1, 'listing_id')).toEqual([]);
  const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
  const warning = `model mindsdb/${name} got a new active version during the run: version 2 is active now; the run stayed pinned to version 1, active when it started, and every row is version 1's answer (score again for version 2's)`;
  expect(manifest).toMatchObject({ state: 'succeeded', model: { requestedVersion: null, resolvedVersion: 1 }, counts: { rowsScored: ROWS } });
  expect(manifest.warnings).toContain(warning);
  const logged = log
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; pinned?: number; active?: number });
  expect(logged).toContainEqual(expect.objectContaining({ msg: warning, pinned: 1, active: 2 }));
}

const doneMarkers = async (folder: string) => {
  const segments = join(folder, '_work', 'segments');
  return existsSync(segments) ? (await readdir(segments)).filter((f) => f.endsWith('.done.json')).length : 0;
};

describe('a model retrained during a run, on a real MindsDB', () => {
  const f = useQueueFixture();

  it('score: the run stays on the version it was pinned to, and its manifest and log say a newer one became active', async () => {
    const name = `retrain_score_${tag}`;
    await trainModel(name);
    const out = join(tmp.dir, 'score');
    const folder = join(out, 'r');
    const args = ['--segment-rows', String(SLOW.segmentRows), '--batch-size', String(SLOW.batchSize), '--concurrency', String(SLOW.concurrency)];
    const run = startCli([
      'score',
      input,
      '--model',
      `mindsdb/${name}`,
      '--out',
      out,
      '--run-id',
      'r',
      '--service',
      conn.url,
      '--segments-at-once',
      '1',
      ...args,
    ]);
    await waitFor('the run to score its first segment', async () => (await doneMarkers(folder)) > 0 || run.child.exitCode !== null);
    run.child.kill('SIGSTOP');
    try {
      // Paused mid-run: neither finished nor failed.
      expect(run.child.exitCode).toBeNull();
      expect(await doneMarkers(folder)).toBeLessThan(ROWS / SLOW.segmentRows);
      await startRetrain(name);
      await retrained(name);
    } finally {
      run.child.kill('SIGCONT');
    }
    expect(await run.exited, run.stderr()).toBe(0);
    await expectPinnedThroughRetrain(name, folder, run.stderr());
  });

  it('queue: a worker that comes after the retrain scores the rest on the pinned version, and the run says a newer one became active', async () => {
    const name = `retrain_queue_${tag}`;
    await trainModel(name);
    f.setupService(conn.url);
    const first = f.worker(['--max-in-flight', '1']);
    const out = join(tmp.dir, 'queue');
    const { runId } = await f.queue.enqueue({ input, model: `mindsdb/${name}`, out, options: { runId: 'q', ...SLOW } });
    await waitFor('the run to start scoring', async () => ((await f.queue.get(runId))?.progress?.rowsDone ?? 0) > 0);
    // The retrain begins while the worker scores; the worker leaves, handing its segment back.
    await startRetrain(name);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect((await f.queue.get(runId))?.state).not.toBe('succeeded');
    await retrained(name);
    const second = f.worker(['--max-in-flight', '1']);
    expect((await f.finished(runId)).state).toBe('succeeded');
    // Both scored: rows before the retrain and after it, all of version 1.
    const pids = (await f.queue.logs(runId)).flatMap((l) => (l.startsWith('segment ') ? [/\(\S+:(\d+), attempt/.exec(l)![1]] : []));
    expect(new Set(pids)).toEqual(new Set([first, second].map((w) => String(w.child.pid))));
    await expectPinnedThroughRetrain(name, join(out, runId), second.log());
  });
});
