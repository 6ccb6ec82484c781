import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Comparison } from '../../src/scoring/model-comparison.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { scoreCli } from './score-cli.js';
import { sqlDisagreements, sqlPredictions } from './sql-predictions.js';

// Model versions on the real server: `home_rentals_model` has versions 1 and 2 (active), and
// each answers differently (see models.ts).

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 2_000;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
/** The server's SQL answers per version, by listing id. */
const truth: Record<'v1' | 'v2' | 'active', Map<string, Record<string, unknown>>> = { v1: new Map(), v2: new Map(), active: new Map() };

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  const csv = rentalsText(ROWS);
  await writeFile(input, csv);
  // The SQL join takes a version as the model's name does (`mindsdb.home_rentals_model.1`).
  [truth.v1, truth.v2, truth.active] = await Promise.all(
    ['home_rentals_model.1', 'home_rentals_model.2', 'home_rentals_model'].map((m) => sqlPredictions(conn, m, csv, 'listing_id')),
  );
});
afterAll(() => tmp.cleanup());

async function scoreModel(runId: string, model: string, extra: string[] = []): Promise<{ folder: string; rows: Record<string, string>[]; manifest: Manifest }> {
  const { folder, ...r } = await scoreCli({ input, model, service: conn.url, out: join(tmp.dir, 'runs'), runId, flags: ['--json', ...extra] });
  expect(r.code, r.stderr).toBe(0);
  const rows = parseCsv(await readFile(join(folder, 'predictions.csv'), 'utf8'));
  expect(rows).toHaveLength(ROWS);
  return { folder, rows, manifest: JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest };
}

describe('model versions on a real MindsDB', () => {
  it('the two versions answer differently, by SQL too, so that a run on the wrong one is seen', () => {
    const differ = [...truth.v1].filter(([id, a]) => a.rental_price !== truth.v2.get(id)!.rental_price).length;
    expect(differ).toBeGreaterThan(ROWS * 0.95);
    // Without a version, SQL answers with the active one.
    expect([...truth.active]).toEqual([...truth.v2]);
  });

  it('a run pinned to .1 or .2 gets that version’s answers, and an unversioned run pins to the active version 2', async () => {
    const one = await scoreModel('v1', 'mindsdb/home_rentals_model.1');
    expect(sqlDisagreements(one.rows, truth.v1, 'listing_id')).toEqual([]);
    expect(one.manifest.model).toMatchObject({ requested: 'mindsdb/home_rentals_model.1', requestedVersion: 1, resolvedVersion: 1 });
    // Pinned on purpose to a version that is not the active one: nothing to warn of.
    expect(one.manifest.warnings).toEqual([]);

    const two = await scoreModel('v2', 'mindsdb/home_rentals_model.2');
    expect(sqlDisagreements(two.rows, truth.v2, 'listing_id')).toEqual([]);
    expect(two.manifest.model).toMatchObject({ requested: 'mindsdb/home_rentals_model.2', requestedVersion: 2, resolvedVersion: 2 });

    const active = await scoreModel('active', 'mindsdb/home_rentals_model');
    expect(sqlDisagreements(active.rows, truth.active, 'listing_id')).toEqual([]);
    expect(active.manifest.model).toMatchObject({ requested: 'mindsdb/home_rentals_model', requestedVersion: null, resolvedVersion: 2, status: 'complete' });
    expect(active.manifest.warnings).toEqual([]);
    // The snapshot it was pinned from: describe of the model without a version, the active one.
    const describe = JSON.parse(await readFile(join(active.folder, 'describe.json'), 'utf8')) as { answers: { response: unknown }[] };
    expect(describe.answers[0].response).toMatchObject([{ NAME: 'home_rentals_model', VERSION: 2, ACTIVE: true, STATUS: 'complete' }]);
    expect(await readFile(join(active.folder, 'predictions.csv'))).toEqual(await readFile(join(two.folder, 'predictions.csv')));
  });

  it('--compare-model .1 beside .2: comparison.json’s figures are those of the two versions’ SQL answers', async () => {
    const run = await scoreModel('compare', 'mindsdb/home_rentals_model.2', ['--compare-model', 'mindsdb/home_rentals_model.1']);
    expect(sqlDisagreements(run.rows, truth.v2, 'listing_id')).toEqual([]);
    const comparison = JSON.parse(await readFile(join(run.folder, 'comparison.json'), 'utf8')) as Comparison;
    expect(comparison).toMatchObject({ model: 'mindsdb/home_rentals_model.2', other: 'mindsdb/home_rentals_model.1', unanswered: 0 });
    expect(comparison.targets).toHaveLength(1);
    const [target] = comparison.targets;
    const want = expectedComparison();
    expect(target).toMatchObject({
      target: 'rental_price',
      compared: ROWS,
      agreed: want.agreed,
      agreement: want.agreed / ROWS,
      difference: { count: ROWS, min: Math.min(...want.differences), max: Math.max(...want.differences) },
      minShift: { count: ROWS, min: Math.min(...want.minShifts), max: Math.max(...want.minShifts) },
      maxShift: { count: ROWS, min: Math.min(...want.maxShifts), max: Math.max(...want.maxShifts) },
    });
    expect(target.difference!.mean).toBeCloseTo(mean(want.differences), 9);
    expect(target.meanAbsDifference).toBeCloseTo(mean(want.differences.map(Math.abs)), 9);
    expect(target.minShift!.mean).toBeCloseTo(mean(want.minShifts), 9);
    expect(target.maxShift!.mean).toBeCloseTo(mean(want.maxShifts), 9);
    expect(target.rows.map(({ row, main, other, difference }) => ({ row, main, other, difference }))).toEqual(want.rows);
    // The manifest carries the same figures without the rows.
    const { rows: _rows, ...figures } = target;
    expect(run.manifest.comparison).toMatchObject({ file: 'comparison.json', model: comparison.model, other: comparison.other, targets: [figures] });
  });
});

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/**
 * Shadow scoring's figures, from SQL: for each row (1-based, in input order) other − main of the
 * value and of each end of the interval, with version 2 the main model and version 1 the other;
 * the 20 rows that differ most, by |difference|, ties by row.
 */
function expectedComparison() {
  const differences: number[] = [];
  const minShifts: number[] = [];
  const maxShifts: number[] = [];
  const differing: { row: number; main: number; other: number; difference: number }[] = [];
  let agreed = 0;
  for (let i = 0; i < ROWS; i++) {
    const id = `L${String(i).padStart(8, '0')}`;
    const [main, other] = [truth.v2.get(id)!, truth.v1.get(id)!];
    const difference = Number(other.rental_price) - Number(main.rental_price);
    differences.push(difference);
    minShifts.push(Number(other.rental_price_min) - Number(main.rental_price_min));
    maxShifts.push(Number(other.rental_price_max) - Number(main.rental_price_max));
    if (difference === 0) agreed++;
    else differing.push({ row: i + 1, main: Number(main.rental_price), other: Number(other.rental_price), difference });
  }
  const rows = differing.sort((a, b) => Math.abs(b.difference) - Math.abs(a.difference) || a.row - b.row).slice(0, 20);
  return { agreed, differences, minShifts, maxShifts, rows };
}
