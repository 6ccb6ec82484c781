import { describe, expect, it } from 'vitest';
import { computeDrift, DRIFT_BINS, type ColumnDrift, type Drift } from '../../src/scoring/drift.js';
import { buildOutputSchema, predictionMembers } from '../../src/scoring/output-schema.js';
import { ProfileAccumulator, type PredictionProfile } from '../../src/scoring/prediction-profile.js';
import { mulberry32 } from '../../src/simulator/prng.js';

/** One numeric target with confidence and interval; two inputs, `sqft` (numbers) and `area` (classes). */
const SCHEMA = buildOutputSchema(['price'], { price: 1, price_confidence: 0.5, price_min: 0, price_max: 2 }, [], predictionMembers(undefined, false));
const INPUTS = ['sqft', 'area'];

interface Rows {
  price: number[];
  confidence: number[];
  sqft: (number | null)[];
  area: string[];
}

/** Rows drawn with a seed: sqft normal around `sqftMean`, area from `areas` with these weights. */
function draw(seed: number, n: number, sqftMean: number, areaWeights: number[]): Rows {
  const random = mulberry32(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const rows: Rows = { price: [], confidence: [], sqft: [], area: [] };
  const total = areaWeights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < n; i++) {
    const sqft = random() < 0.05 ? null : sqftMean + 200 * normal();
    rows.sqft.push(sqft);
    let pick = random() * total;
    const area = ['north', 'south', 'east', 'west'].find((_, k) => (pick -= areaWeights[k]) < 0) ?? 'west';
    rows.area.push(area);
    rows.price.push(2 * (sqft ?? 1000) + 100 * normal());
    rows.confidence.push(0.5 + 0.5 * random());
  }
  return rows;
}

function profile(rows: Rows): PredictionProfile {
  const acc = new ProfileAccumulator(SCHEMA, INPUTS);
  rows.price.forEach((price, i) => {
    acc.add([price, rows.confidence[i], price - 50, price + 50]);
    acc.addInputs([rows.sqft[i], rows.area[i]]);
  });
  return JSON.parse(JSON.stringify(acc.summary())) as PredictionProfile;
}

const THRESHOLDS = { warn: 0.1, fail: 0.25 };

function drift(before: Rows, after: Rows): Drift {
  return computeDrift(profile(after), { runId: 'base', finishedAt: '2026-11-24T02:00:00Z', chosen: 'previous', profile: profile(before) }, THRESHOLDS);
}

/** PSI and Jensen–Shannon distance written from their definitions, over raw values put in the bins the drift reports. */
function reference(column: ColumnDrift, before: readonly unknown[], after: readonly unknown[]): { psi: number; js: number } {
  const binOf = (v: unknown) =>
    column.bins.findIndex((b) =>
      v === null
        ? b.label === '(null)'
        : b.label !== undefined
          ? b.label === v
          : (b.lo === undefined || (v as number) >= b.lo) && (b.hi === undefined || (v as number) < b.hi),
    );
  const shares = (values: readonly unknown[]) => {
    const counts = column.bins.map(() => 0);
    for (const v of values) counts[binOf(v)]++;
    return counts.map((c) => c / values.length);
  };
  const [p, q] = [shares(before), shares(after)];
  let psi = 0;
  let kl = 0;
  p.forEach((pi, i) => {
    const [a, b] = [Math.max(pi, 1e-4), Math.max(q[i], 1e-4)];
    psi += (b - a) * Math.log(b / a);
    const m = (pi + q[i]) / 2;
    kl += (pi > 0 ? 0.5 * pi * Math.log2(pi / m) : 0) + (q[i] > 0 ? 0.5 * q[i] * Math.log2(q[i] / m) : 0);
  });
  return { psi, js: Math.sqrt(Math.max(0, kl)) };
}

describe('drift between two runs', () => {
  it('the same data, drawn twice: nothing moved', () => {
    const d = drift(draw(1, 20_000, 1000, [1, 1, 1, 1]), draw(2, 20_000, 1000, [1, 1, 1, 1]));
    expect(d.columns.map((c) => `${c.of}:${c.column}`)).toEqual(['prediction:price', 'confidence:price_confidence', 'input:sqft', 'input:area']);
    for (const c of d.columns) expect(c.psi, c.column).toBeLessThan(0.01);
    expect(d).toMatchObject({ level: 'ok', moved: [], skipped: [], baseline: { runId: 'base', chosen: 'previous' } });
    // The baseline's deciles and its nulls.
    expect(d.columns.find((c) => c.column === 'sqft')!.bins).toHaveLength(DRIFT_BINS + 1);
  });

  it('a shifted input column is flagged by name, with what it moved in the predictions; the others are not', () => {
    const before = draw(1, 20_000, 1000, [1, 1, 1, 1]);
    const after = draw(2, 20_000, 1150, [1, 1, 1, 1]);
    const d = drift(before, after);
    const byName = new Map(d.columns.map((c) => [c.column, c]));
    expect(byName.get('sqft')!.level).toBe('fail');
    expect(byName.get('price')!.level).not.toBe('ok');
    expect(byName.get('area')!.level).toBe('ok');
    expect(byName.get('price_confidence')!.level).toBe('ok');
    expect(d.level).toBe('fail');
    expect(d.moved).toContain('sqft');
    expect(d.moved).not.toContain('area');
  });

  it('a categorical column whose class shares changed: its PSI, distance and shares as a reference computes them', () => {
    const before = draw(1, 20_000, 1000, [1, 1, 1, 1]);
    const after = draw(2, 20_000, 1000, [2, 1, 1, 0.5]);
    const d = drift(before, after);
    const area = d.columns.find((c) => c.column === 'area')!;
    expect(area.level).not.toBe('ok');
    expect(area.bins.find((b) => b.label === 'north')).toEqual({
      label: 'north',
      baseline: before.area.filter((a) => a === 'north').length,
      current: after.area.filter((a) => a === 'north').length,
    });
    const ref = reference(area, before.area, after.area);
    expect(area.psi).toBeCloseTo(ref.psi, 9);
    expect(area.jsDistance).toBeCloseTo(ref.js, 9);
  });

  it('numbers: PSI and distance over the reported bins equal a recount of the raw values', () => {
    for (const [shift, seed] of [
      [0, 3],
      [80, 4],
      [400, 5],
    ]) {
      const before = draw(seed, 10_000, 1000, [1, 1, 1, 1]);
      const after = draw(seed + 100, 7_000, 1000 + shift, [1, 1, 1, 1]);
      const d = drift(before, after);
      for (const [column, a, b] of [
        ['sqft', before.sqft, after.sqft],
        ['price', before.price, after.price],
        ['price_confidence', before.confidence, after.confidence],
      ] as const) {
        const c = d.columns.find((x) => x.column === column)!;
        const ref = reference(c, a, b);
        expect(c.psi, `${column} +${shift}`).toBeCloseTo(ref.psi, 9);
        expect(c.jsDistance, `${column} +${shift}`).toBeCloseTo(ref.js, 9);
      }
      // Larger shifts, larger figures.
      if (shift === 400) expect(d.columns.find((x) => x.column === 'sqft')!.jsDistance).toBeGreaterThan(0.5);
    }
  });

  it('skips a column whose kind changed, and one profiled before 0.4 (no grid)', () => {
    const base = profile(draw(1, 1_000, 1000, [1, 1, 1, 1]));
    const now = profile(draw(2, 1_000, 1000, [1, 1, 1, 1]));
    base.inputs![1] = { ...base.inputs![0], column: 'area' };
    delete base.targets[0].numeric!.distribution;
    const d = computeDrift(now, { runId: 'old', finishedAt: '2026-01-01T00:00:00Z', chosen: 'named', profile: base }, { warn: null, fail: null });
    expect(d.skipped).toEqual([
      { column: 'price', why: 'no grid of its values (a profile from before 0.4)' },
      { column: 'area', why: 'numeric in the baseline, categorical now' },
    ]);
    expect(d.level).toBe('ok');
  });
});
