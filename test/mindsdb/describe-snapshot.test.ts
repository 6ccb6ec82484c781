import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DescribeSnapshot } from '../../src/scoring/describe-snapshot.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { predictExchanges, useRecordingProxy } from './recording-proxy.js';
import { scoreCli } from './score-cli.js';
import { expectSqlPredictions, sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 2_000;
let tmp: Awaited<ReturnType<typeof tempDir>>;
const proxy = useRecordingProxy(conn.url);
let csv: string;

beforeAll(async () => {
  tmp = await tempDir();
  csv = rentalsText(ROWS);
  await writeFile(join(tmp.dir, 'rentals.csv'), csv);
});
afterAll(() => tmp.cleanup());

/** Scores the rentals as `model` through the proxy; answers the run's folder files and what went over the wire for it. */
async function scoreThroughProxy(model: string, runId: string) {
  const before = proxy.exchanges.length;
  const res = await scoreCli({ input: join(tmp.dir, 'rentals.csv'), model, service: proxy.url, out: join(tmp.dir, 'out'), runId });
  expect(res.code, res.stderr).toBe(0);
  const read = (name: string) => readFile(join(res.folder, name), 'utf8');
  const wire = proxy.exchanges.slice(before);
  return {
    snapshot: JSON.parse(await read('describe.json')) as DescribeSnapshot,
    manifest: JSON.parse(await read('manifest.json')) as Manifest,
    scored: parseCsv(await read('predictions.csv')),
    describes: wire.filter((e) => e.path.endsWith('/describe')),
    predicts: predictExchanges(wire),
  };
}

describe('describe snapshots and version pinning against a real MindsDB', () => {
  it('keeps both describe answers as the server sent them, and pins the run to the active version, 2', async () => {
    const run = await scoreThroughProxy('mindsdb/home_rentals_model', 'active');
    // `{}` of the model's name, then `info` of the version `{}` named: both the run's model. At the
    // end, `{}` of the name again: whether another version became active while the run scored.
    expect(run.describes.map((e) => [e.method, e.path, JSON.parse(e.request.toString('utf8')) as unknown])).toEqual([
      ['GET', '/api/projects/mindsdb/models/home_rentals_model/describe', {}],
      ['GET', '/api/projects/mindsdb/models/home_rentals_model.2/describe', { attribute: 'info' }],
      ['GET', '/api/projects/mindsdb/models/home_rentals_model/describe', {}],
    ]);
    // Each answer as the server wrote it: the same members in the same order, the same values.
    expect(run.snapshot.answers.map((a) => a.request)).toEqual([{}, { attribute: 'info' }]);
    expect(run.snapshot.answers.map((a) => JSON.stringify(a.response))).toEqual(
      run.describes.slice(0, 2).map((e) => JSON.stringify(JSON.parse(e.answer.toString('utf8')))),
    );
    expect(run.snapshot.answers[0].response).toMatchObject([{ NAME: 'home_rentals_model', VERSION: 2, ACTIVE: true, STATUS: 'complete' }]);
    expect(run.snapshot.answers[1].response).toMatchObject([{ outputs: ['rental_price'] }]);
    expect(run.snapshot).toMatchObject({ service: proxy.url, model: 'mindsdb/home_rentals_model' });
    expect(run.manifest.model).toMatchObject({ requested: 'mindsdb/home_rentals_model', requestedVersion: null, resolvedVersion: 2, status: 'complete' });
    // Every predict, planning's probe too, went to version 2 by name.
    expect(new Set(run.predicts.map((p) => p.model))).toEqual(new Set(['home_rentals_model.2']));
    expectSqlPredictions(run.scored, await sqlPredictions(conn, 'home_rentals_model.2', csv, 'listing_id'), 'listing_id');
  });

  it('scores version 1 when asked for .1: its describe answers, its manifest and its predictions', async () => {
    const run = await scoreThroughProxy('mindsdb/home_rentals_model.1', 'v1');
    expect(run.describes.map((e) => e.path)).toEqual([
      '/api/projects/mindsdb/models/home_rentals_model.1/describe',
      '/api/projects/mindsdb/models/home_rentals_model.1/describe',
    ]);
    expect(run.snapshot.answers.map((a) => JSON.stringify(a.response))).toEqual(
      run.describes.slice(0, 2).map((e) => JSON.stringify(JSON.parse(e.answer.toString('utf8')))),
    );
    expect(run.snapshot.answers[0].response).toMatchObject([{ VERSION: 1, ACTIVE: false, STATUS: 'complete' }]);
    expect(run.manifest.model).toMatchObject({ requested: 'mindsdb/home_rentals_model.1', requestedVersion: 1, resolvedVersion: 1 });
    expect(new Set(run.predicts.map((p) => p.model))).toEqual(new Set(['home_rentals_model.1']));
    const v1 = await sqlPredictions(conn, 'home_rentals_model.1', csv, 'listing_id');
    expectSqlPredictions(run.scored, v1, 'listing_id');
    // The versions differ, so the comparison above tells them apart.
    const v2 = await sqlPredictions(conn, 'home_rentals_model.2', csv, 'listing_id');
    expect([...v1].filter(([key, row]) => row.rental_price !== v2.get(key)?.rental_price).length).toBeGreaterThan(ROWS * 0.9);
  });
});
