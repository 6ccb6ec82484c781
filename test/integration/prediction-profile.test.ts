import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { PROFILE_QUANTILES, RELATIVE_ACCURACY, type NumericSummary } from '../../src/scoring/prediction-profile.js';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { parseCsv, startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const ROWS = 3_000;
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let rentals: string;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  rentals = join(tmp.dir, 'rentals.csv');
  await writeRentals(rentals, ROWS);
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

/** Runs `batch-scorer score` (the built CLI) and returns the run's manifest.json and predictions.csv rows. */
async function scoreCli(input: string, runId: string, flags: string[], model = 'mindsdb/home_rentals_model') {
  const out = join(tmp.dir, 'out');
  const r = await runCli(['score', input, '--model', model, '--out', out, '--run-id', runId, ...flags], { MODEL_SERVICE_URL: sim.url });
  expect(r.code, r.stderr).toBe(0);
  const manifest = JSON.parse(await readFile(join(out, runId, 'manifest.json'), 'utf8')) as Manifest;
  return { manifest, rows: parseCsv(await readFile(join(out, runId, 'predictions.csv'), 'utf8')) };
}

/** A numeric summary checked against the values it summarizes: exact figures, and quantiles within the sketch's accuracy. */
function expectSummaryOf(summary: NumericSummary | null, values: number[]): void {
  const sorted = [...values].sort((a, b) => a - b);
  expect(summary).toMatchObject({ count: values.length, min: sorted[0], max: sorted[sorted.length - 1] });
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  expect(Math.abs(summary!.mean - mean)).toBeLessThanOrEqual(1e-9 * Math.abs(mean));
  expect(summary!.quantiles.map((q) => q.p)).toEqual(PROFILE_QUANTILES);
  for (const { p, value } of summary!.quantiles) {
    const exact = sorted[Math.floor(p * (sorted.length - 1))];
    expect(Math.abs(value - exact), `p${p}`).toBeLessThanOrEqual(RELATIVE_ACCURACY * Math.abs(exact) * (1 + 1e-9));
  }
  expect(summary!.histogram.reduce((n, b) => n + b.count, 0)).toBe(values.length);
  // Each bin is exactly its recount.
  const last = summary!.histogram.length - 1;
  summary!.histogram.forEach((bin, i) => {
    expect(bin.count, `bin ${i} [${bin.lo}, ${bin.hi})`).toBe(values.filter((v) => v >= bin.lo && (v < bin.hi || (i === last && v === bin.hi))).length);
  });
}

describe('the prediction profile in manifest.json (score through the CLI)', () => {
  it('summarizes predictions.csv, and is the same whatever --concurrency and --segment-rows', async () => {
    const a = await scoreCli(rentals, 'p1', ['--concurrency', '1', '--segment-rows', '700']);
    const b = await scoreCli(rentals, 'p8', ['--concurrency', '8', '--segment-rows', '1100', '--segments-at-once', '3', '--batch-size', '64']);
    expect(a.manifest.counts).toMatchObject({ rowsScored: ROWS, segments: 5 });
    expect(b.manifest.counts).toMatchObject({ rowsScored: ROWS, segments: 3 });
    const profile = a.manifest.profile!;
    expect(b.manifest.profile).toEqual(profile);

    expect(profile.relativeAccuracy).toBe(RELATIVE_ACCURACY);
    expect(profile.targets).toHaveLength(1);
    const [price] = profile.targets;
    expect(price).toMatchObject({ target: 'rental_price', column: 'rental_price', kind: 'numeric', classes: null, otherClasses: 0 });
    expect(price.count + price.nulls).toBe(a.manifest.counts!.rowsScored);
    const values = (column: string) => a.rows.filter((r) => r[column] !== '').map((r) => Number(r[column]));
    expect(price.count).toBe(values('rental_price').length);
    expectSummaryOf(price.numeric, values('rental_price'));
    expectSummaryOf(price.confidence, values('rental_price_confidence'));

    // The input columns the model reads, recounted from the input file.
    const input = parseCsv(await readFile(rentals, 'utf8'));
    const inputs = new Map(profile.inputs!.map((i) => [i.column, i]));
    const sqft = input.map((r) => Number(r.sqft));
    expect(inputs.get('sqft')).toMatchObject({ kind: 'numeric', count: ROWS, nulls: 0, classes: null });
    expectSummaryOf(inputs.get('sqft')!.numeric, sqft);
    const locations = input.filter((r) => r.location !== '').map((r) => r.location);
    expect(inputs.get('location')).toMatchObject({ kind: 'categorical', count: locations.length, nulls: ROWS - locations.length, numeric: null });
    for (const { value, count } of inputs.get('location')!.classes!) expect(count, value).toBe(locations.filter((l) => l === value).length);
    expect(inputs.has('listing_id')).toBe(false);
  });

  it('counts the classes of a categorical target', async () => {
    const churn = join(tmp.dir, 'churn.csv');
    const lines = Array.from({ length: 400 }, (_, i) => `c${i},${i % 73},${i % 3 === 0 ? 'basic' : 'pro'},${20 + (i % 11) * 10}`);
    await writeFile(churn, `customer,tenure_months,plan,monthly_charges\n${lines.join('\n')}\n`);
    const { manifest, rows } = await scoreCli(churn, 'churn', ['--segment-rows', '150'], 'mindsdb/customer_churn');
    const [target] = manifest.profile!.targets;
    const yes = rows.filter((r) => r.churn === 'yes').length;
    expect(yes).toBeGreaterThan(0);
    expect(yes).toBeLessThan(400);
    expect(target).toMatchObject({ target: 'churn', kind: 'categorical', count: 400, nulls: 0, numeric: null, otherClasses: 0 });
    expect(target.classes).toEqual(
      [
        { value: 'yes', count: yes },
        { value: 'no', count: 400 - yes },
      ].sort((x, y) => y.count - x.count || (x.value < y.value ? -1 : 1)),
    );
    expectSummaryOf(
      target.confidence,
      rows.map((r) => Number(r.churn_confidence)),
    );
  });
});
