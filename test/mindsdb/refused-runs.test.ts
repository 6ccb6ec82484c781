import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { churnCsv } from './models.js';
import { predictExchanges, useRecordingProxy, type Exchange } from './recording-proxy.js';
import { scoreCli } from './score-cli.js';
import { expectSqlPredictions, sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const RENTAL = 'mindsdb/home_rentals_model';
/** The rentals' columns but four of the model's inputs. */
const NARROW = ['listing_id', 'number_of_rooms', 'sqft', 'location'];
const LEFT_OUT = 'number_of_bathrooms, days_on_market, initial_price, neighborhood';
let tmp: Awaited<ReturnType<typeof tempDir>>;
const proxy = useRecordingProxy(conn.url);

beforeAll(async () => {
  tmp = await tempDir();
  await writeFile(join(tmp.dir, 'rentals.csv'), rentalsText(500));
  await writeFile(join(tmp.dir, 'churn.csv'), churnCsv(500));
  const narrow = [csvLine(NARROW)];
  for (let i = 0; i < 500; i++) narrow.push(csvLine(NARROW.map((c) => rentalRow(i)[RENTAL_COLUMNS.indexOf(c as (typeof RENTAL_COLUMNS)[number])])));
  await writeFile(join(tmp.dir, 'narrow.csv'), narrow.join(''));
});
afterAll(() => tmp.cleanup());

/** A run through the proxy with --json: its output, summary, manifest, whether it wrote _SUCCESS, and what went over the wire. */
async function run(input: string, model: string, runId: string, flags: string[] = []) {
  const before = proxy.exchanges.length;
  const res = await scoreCli({ input: join(tmp.dir, input), model, service: proxy.url, out: join(tmp.dir, 'out'), runId, flags: ['--json', ...flags] });
  const manifest = JSON.parse(await readFile(join(res.folder, 'manifest.json'), 'utf8')) as Manifest;
  const summary = JSON.parse(res.stdout) as { state: string; error?: { code: string; message: string } };
  return { ...res, manifest, summary, succeeded: existsSync(join(res.folder, '_SUCCESS')), wire: proxy.exchanges.slice(before) };
}

type Run = Awaited<ReturnType<typeof run>>;

/** A refused run: the code's exit status, no _SUCCESS, the failure in the summary and the manifest, and its message on stderr. */
function expectRefused(r: Run, code: ErrorCode): string {
  expect(r.code, r.stderr).toBe(ERROR_CATALOGUE[code].exit);
  expect(r.succeeded).toBe(false);
  expect(r.summary).toMatchObject({ state: 'failed', error: { code } });
  expect(r.manifest).toMatchObject({ state: 'failed', error: { code, message: r.summary.error!.message } });
  expect(r.stderr).toContain(`batch-scorer: run ${r.manifest.runId} failed: ${r.summary.error!.message} [${code}]`);
  return r.summary.error!.message;
}

/** The server's one error answer of the run, its body as sent. */
function errorAnswer(wire: Exchange[], status: number): { exchange: Exchange; body: Record<string, string> } {
  const failed = wire.filter((e) => e.status >= 400);
  expect(failed.map((e) => e.status)).toEqual([status]);
  return { exchange: failed[0], body: JSON.parse(failed[0].answer.toString('utf8')) as Record<string, string> };
}

describe('runs the real MindsDB refuses, and what the user is told', () => {
  it.each([
    ['a project', 'nope/home_rentals_model', '/api/projects/nope/models/home_rentals_model/describe', 'Project not found', 'Project name nope does not exist'],
    ['a model', 'mindsdb/nope', '/api/projects/mindsdb/models/nope/describe', 'Model not found', 'Model with name nope not found'],
    [
      'a version',
      'mindsdb/home_rentals_model.9',
      '/api/projects/mindsdb/models/home_rentals_model.9/describe',
      'Model not found',
      'Model with name home_rentals_model.9 not found',
    ],
  ])('names %s the server does not know, from its 404, exit 2', async (_what, model, path, title, detail) => {
    const r = await run('rentals.csv', model, `unknown-${model.replace(/\W/g, '-')}`);
    const message = expectRefused(r, 'E_MODEL_NOT_FOUND');
    const { exchange, body } = errorAnswer(r.wire, 404);
    expect([exchange.path, exchange.contentType, body.title, body.detail]).toEqual([path, 'application/problem+json', title, detail]);
    // The server's own words, then what to do; nothing of its timestamp.
    expect(message).toBe(`describe ${proxy.url}${path}: HTTP 404 ${title}: ${detail} (check the project and model names, and the version after the dot)`);
    expect(predictExchanges(r.wire)).toEqual([]);
  });

  it('tells the user to pass --envelope data when MindsDB answers the bare array 500 TypeError, exit 2', async () => {
    const r = await run('rentals.csv', RENTAL, 'array', ['--envelope', 'array']);
    const message = expectRefused(r, 'E_WRONG_ENVELOPE');
    const { exchange, body } = errorAnswer(r.wire, 500);
    expect(exchange.request.toString('utf8').startsWith('[{')).toBe(true);
    expect([exchange.contentType, body.title, body.detail]).toEqual(['application/json', 'TypeError', 'list indices must be integers or slices, not str']);
    expect(message).toBe(
      `predict ${proxy.url}/api/projects/mindsdb/models/home_rentals_model.2/predict: HTTP 500 TypeError: list indices must be integers or slices, not str ` +
        '(the server expects the other body envelope: pass --envelope data, the body {"data": [...]} as MindsDB reads it)',
    );
    // Not tried again: it would fail the same way.
    expect(predictExchanges(r.wire)).toHaveLength(1);
  });

  it('refuses an input with none of the model’s columns before any predict, naming them, exit 2', async () => {
    const r = await run('churn.csv', RENTAL, 'no-columns');
    const message = expectRefused(r, 'E_COLUMNS');
    expect(message).toBe(
      `${join(tmp.dir, 'churn.csv')} has none of the model's input columns (number_of_rooms, number_of_bathrooms, sqft, days_on_market, initial_price, location, neighborhood); ` +
        'its columns are customer_id, tenure_months, plan, monthly_charges',
    );
    expect(predictExchanges(r.wire)).toEqual([]);
  });

  it('refuses an input lacking some of the model’s columns with --strict-columns, naming those, exit 2', async () => {
    const r = await run('narrow.csv', RENTAL, 'strict', ['--strict-columns']);
    const message = expectRefused(r, 'E_COLUMNS');
    expect(message).toBe(`${join(tmp.dir, 'narrow.csv')} lacks the model's input column(s) ${LEFT_OUT} (--strict-columns)`);
    expect(predictExchanges(r.wire)).toEqual([]);
  });

  it('scores it without --strict-columns, warning: MindsDB sees the missing columns as its SQL does', async () => {
    const r = await run('narrow.csv', RENTAL, 'lenient');
    expect(r.code, r.stderr).toBe(0);
    expect(r.succeeded).toBe(true);
    const warning = `${join(tmp.dir, 'narrow.csv')} lacks the model's input column(s) ${LEFT_OUT}: the model sees them as null`;
    expect(r.manifest.warnings).toContain(warning);
    expect(r.stderr).toContain(warning);
    // Only the columns the file has are sent (after planning's probe, which offers both row id members).
    for (const p of predictExchanges(r.wire).slice(1))
      for (const row of p.sent) expect(Object.keys(row).toSorted()).toEqual(['__mindsdb_row_id', 'location', 'number_of_rooms', 'sqft']);
    const scored = parseCsv(await readFile(join(tmp.dir, 'out', 'lenient', 'predictions.csv'), 'utf8'));
    const narrow = await readFile(join(tmp.dir, 'narrow.csv'), 'utf8');
    expectSqlPredictions(scored, await sqlPredictions(conn, 'home_rentals_model', narrow, 'listing_id'), 'listing_id', [
      'rental_price',
      'rental_price_confidence',
      'rental_price_min',
      'rental_price_max',
    ]);
  });
});
