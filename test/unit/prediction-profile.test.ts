import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactSum } from '../../src/scoring/exact-sum.js';
import { mulberry32 } from '../../src/simulator/prng.js';
import { buildOutputSchema, predictionMembers, type OutputSchema } from '../../src/scoring/output-schema.js';
import {
  CLASSES_KEPT,
  CLASSES_LISTED,
  HISTOGRAM_BINS,
  predictionProfileSchema,
  PROFILE_QUANTILES,
  ProfileAccumulator,
  ProfileMerger,
  RELATIVE_ACCURACY,
  segmentProfileSchema,
  type NumericSummary,
  type SegmentProfile,
  type PredictionProfile,
} from '../../src/scoring/prediction-profile.js';

/**
 * Three targets: `price` answers an interval (numeric whatever its values), `label` and `score`
 * do not (their kind follows their values). Columns per target: value, confidence, [min, max], anomaly.
 */
const SCHEMA = buildOutputSchema(
  ['price', 'label', 'score'],
  { price: 1, price_confidence: 1, price_min: 0, price_max: 2, label: 'a', label_confidence: 1, score: 1, score_confidence: 1 },
  ['price'],
  predictionMembers(undefined, false),
);
/** A row's values as the model answered them, one object per target: value and confidence. */
type Answer = Record<'price' | 'label' | 'score', { value: unknown; confidence: unknown }>;

/** The predictions array `scoreBatch` makes of an answer: schema order, null where absent. */
/** The run's profile from segments' profiles in segment order, as assembly folds them. */
function mergeProfiles(schema: OutputSchema, segments: readonly (SegmentProfile | null)[]) {
  const merger = new ProfileMerger(schema, []);
  segments.forEach((s, i) => merger.add(s, i));
  return merger.result();
}

function predictions(answer: Answer): unknown[] {
  return SCHEMA.targets.flatMap((t) => {
    const a = answer[t.target as keyof Answer];
    return t.columns.map((c) => (c.member === t.target ? a.value : c.member === `${t.target}_confidence` ? a.confidence : null));
  });
}

/** A segment's profile as its done marker keeps it, read back as assembly reads it. */
function segment(rows: readonly Answer[]) {
  const acc = new ProfileAccumulator(SCHEMA, []);
  for (const r of rows) acc.add(predictions(r));
  return segmentProfileSchema.parse(JSON.parse(JSON.stringify(acc.toJSON())));
}

/** The manifest's profile of rows cut into segments at `cuts`, as written to and read from manifest.json. */
function profileOf(rows: readonly Answer[], cuts: readonly number[] = []): PredictionProfile {
  const edges = [0, ...[...cuts].sort((a, b) => a - b), rows.length];
  const segments = edges.slice(1).map((end, i) => segment(rows.slice(edges[i], end)));
  const { profile, warning } = mergeProfiles(SCHEMA, segments);
  expect(warning).toBeUndefined();
  return predictionProfileSchema.parse(JSON.parse(JSON.stringify(profile)));
}

/** Magnitudes the sketch resolves together (within SKETCH_BUCKETS of each other), and zeros. */
const finite = fc.oneof(
  fc.constantFrom(0, -0),
  fc.double({ min: 1e-6, max: 1e9, noNaN: true }),
  fc.double({ min: -1e9, max: -1e-6, noNaN: true }),
  fc.integer({ min: -1000, max: 1000 }),
);
const answer: fc.Arbitrary<Answer> = fc.record({
  price: fc.record({ value: fc.option(finite), confidence: fc.option(fc.oneof(fc.constant(0), fc.double({ min: 1e-6, max: 1, noNaN: true }))) }),
  label: fc.record({ value: fc.option(fc.constantFrom('yes', 'no', 'maybe', 'y\u00e9s', '')), confidence: fc.constant(null) }),
  score: fc.record({ value: fc.option(fc.oneof(finite, fc.integer({ min: -3, max: 3 }))), confidence: fc.option(finite) }),
});

/** The exact value the sketch answers for quantile p (by rank p·(n-1), rounded either way). */
function withinAccuracy(sorted: readonly number[], p: number, value: number): boolean {
  const rank = p * (sorted.length - 1);
  return [sorted[Math.floor(rank)], sorted[Math.ceil(rank)]].some(
    (exact) => Math.abs(value - exact) <= RELATIVE_ACCURACY * Math.abs(exact) * (1 + 1e-9) + 1e-300,
  );
}

/**
 * What a numeric summary must say of these values: count, min and max exactly, and unless the
 * values are beyond the sketch's reach (`resolved` false), the mean and quantiles too.
 */
function checkSummary(summary: NumericSummary | null, values: readonly number[], resolved = true): void {
  if (values.length === 0) {
    expect(summary).toBeNull();
    return;
  }
  const sorted = [...values].sort((a, b) => a - b);
  expect(summary).not.toBeNull();
  const s = summary!;
  expect(s.count).toBe(values.length);
  expect(s.min).toBe(sorted[0] + 0);
  expect(s.max).toBe(sorted[sorted.length - 1] + 0);
  expect(s.quantiles.map((q) => q.p)).toEqual(PROFILE_QUANTILES);
  if (resolved) {
    const naive = values.reduce((a, b) => a + b, 0) / values.length;
    expect(Math.abs(s.mean - naive)).toBeLessThanOrEqual(1e-9 * Math.max(1, ...values.map(Math.abs)));
    for (const q of s.quantiles) {
      expect(withinAccuracy(sorted, q.p, q.value), `p${q.p} = ${q.value} of ${JSON.stringify(sorted)}`).toBe(true);
    }
  }
  expect(s.histogram.reduce((n, b) => n + b.count, 0)).toBe(values.length);
  if (s.min === s.max) expect(s.histogram).toHaveLength(1);
  else expect(s.histogram.length).toBeLessThanOrEqual(HISTOGRAM_BINS);
  s.histogram.forEach((b, i) => expect(b.lo < b.hi || s.min === s.max, `bin ${i}`).toBe(true));
  s.histogram.slice(1).forEach((b, i) => expect(b.lo).toBe(s.histogram[i].hi));
  expect(s.histogram[0].lo).toBe(s.min);
  expect(s.histogram[s.histogram.length - 1].hi).toBe(s.max);
}

const numbers = (xs: readonly unknown[]) => xs.filter((x): x is number => typeof x === 'number');

describe('ExactSum', () => {
  it('is exact where a double sum is not', () => {
    const sum = new ExactSum();
    for (const x of [1e16, 1, -1e16]) sum.add(x);
    expect(sum.value()).toBe(1);
    const tenths = ExactSum.of(Array<number>(10).fill(0.1));
    expect(tenths.value()).toBe(1);
    expect(
      Array<number>(10)
        .fill(0.1)
        .reduce((a, b) => a + b),
    ).not.toBe(1);
  });

  it('rounds the exact total correctly, and the sums of any split add up to the same double', () => {
    // Multiples of 2^-20: the exact total is an integer sum (BigInt) over 2^20.
    const scaled = fc.array(fc.integer({ min: -(2 ** 52), max: 2 ** 52 }), { maxLength: 60 });
    fc.assert(
      fc.property(scaled, fc.nat(), (ints, cut) => {
        const xs = ints.map((n) => n / 2 ** 20);
        const exact = Number(ints.reduce((a, n) => a + BigInt(n), 0n)) / 2 ** 20;
        const at = xs.length === 0 ? 0 : cut % xs.length;
        const [a, b] = [ExactSum.of(xs.slice(0, at)), ExactSum.of(xs.slice(at))];
        for (const part of b.parts()) a.add(part);
        expect(ExactSum.of(xs).value()).toBe(exact);
        expect(a.value()).toBe(exact);
      }),
    );
  });

  it('holds a sum past the largest double at it, a number JSON can carry', () => {
    const sum = ExactSum.of([Number.MAX_VALUE, Number.MAX_VALUE, 1]);
    expect(sum.value()).toBe(Number.MAX_VALUE);
    expect(sum.parts().every(Number.isFinite)).toBe(true);
  });
});

describe('prediction profile', () => {
  it('merged from any split into segments, says what one profile of all the rows says; each figure is exact or within the sketch accuracy', () => {
    fc.assert(
      fc.property(fc.array(answer, { maxLength: 300 }), fc.array(fc.nat(), { maxLength: 6 }), (rows, cuts) => {
        const whole = profileOf(rows);
        const split = profileOf(
          rows,
          cuts.map((c) => (rows.length === 0 ? 0 : c % (rows.length + 1))),
        );
        expect(split).toEqual(whole);

        const [price, label, score] = split.targets;
        for (const [t, key] of [
          [price, 'price'],
          [label, 'label'],
          [score, 'score'],
        ] as const) {
          const values = rows.map((r) => r[key].value);
          expect(t.count).toBe(values.filter((v) => v !== null).length);
          expect(t.count + t.nulls).toBe(rows.length);
          checkSummary(t.confidence, numbers(rows.map((r) => r[key].confidence)));
        }
        expect(price).toMatchObject({ target: 'price', column: 'pred_price', kind: 'numeric', classes: null, otherClasses: 0 });
        checkSummary(price.numeric, numbers(rows.map((r) => r.price.value)));

        // Categorical: exact counts, most frequent first, ties by value.
        expect(label).toMatchObject({ column: 'label', kind: label.count === 0 ? 'numeric' : 'categorical', otherClasses: 0 });
        if (label.kind === 'categorical') {
          const counts = new Map<string, number>();
          for (const { value } of rows.map((r) => r.label)) if (typeof value === 'string') counts.set(value, (counts.get(value) ?? 0) + 1);
          const expected = [...counts].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
          expect(label.classes).toEqual(expected);
        }
        expect(score.kind).toBe('numeric');
        checkSummary(score.numeric, numbers(rows.map((r) => r.score.value)));
      }),
      { numRuns: 150 },
    );
  });

  it('over the whole range of doubles: the same whatever the split, exact count, min and max, and sketches of bounded size', () => {
    fc.assert(
      fc.property(
        // Sums stay within Number.MAX_VALUE: past it, ExactSum holds there and a split may show.
        fc.array(fc.double({ min: -1e300, max: 1e300, noNaN: true }), { minLength: 1, maxLength: 200 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        (values, cuts) => {
          const rows: Answer[] = values.map((v) => ({
            price: { value: v, confidence: v },
            label: { value: 'a', confidence: null },
            score: { value: v, confidence: null },
          }));
          const split = profileOf(
            rows,
            cuts.map((c) => c % (rows.length + 1)),
          );
          expect(split).toEqual(profileOf(rows));
          for (const t of [split.targets[0].numeric, split.targets[0].confidence, split.targets[2].numeric]) checkSummary(t, values, false);
          const acc = new ProfileAccumulator(SCHEMA, []);
          for (const r of rows) acc.add(predictions(r));
          // Three sketches of two stores of at most 2048 buckets (8 bytes each), in base64.
          expect(JSON.stringify(acc.toJSON()).length).toBeLessThan(3 * 2 * 2048 * 8 * (4 / 3) + 10_000);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a target without an interval is categorical once any value is not a number; its numbers then count as classes by their text', () => {
    const rows: Answer[] = [1, '1', 2, true, 'true', 'x', null].map((value) => ({
      price: { value: 10, confidence: 0.5 },
      label: { value: 'a', confidence: null },
      score: { value, confidence: null },
    }));
    // A numeric segment first: the kind is decided when merging.
    const { profile } = mergeProfiles(SCHEMA, [segment(rows.slice(0, 1)), segment(rows.slice(1))]);
    const score = profile!.targets[2];
    expect(score).toMatchObject({ kind: 'categorical', count: 6, nulls: 1, numeric: null, otherClasses: 0, confidence: null });
    expect(score.classes).toEqual([
      { value: '1', count: 2 },
      { value: 'true', count: 2 },
      { value: '2', count: 1 },
      { value: 'x', count: 1 },
    ]);
  });

  it('a target with an interval stays numeric whatever it answers, and counts non-numbers as values without numbers', () => {
    const rows: Answer[] = [5, 'n/a', 7].map((value) => ({
      price: { value, confidence: 0.9 },
      label: { value: 'a', confidence: null },
      score: { value: 1, confidence: 1 },
    }));
    const price = profileOf(rows).targets[0];
    expect(price).toMatchObject({ kind: 'numeric', count: 3, classes: null, numeric: { count: 2, min: 5, max: 7, mean: 6 } });
  });

  it(`keeps ${CLASSES_KEPT} classes per segment and lists the ${CLASSES_LISTED} most frequent; the other rows are counted as other`, () => {
    const rows: Answer[] = [...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 3_000 }, (_, i) => i % 1_500)].map((c) => ({
      price: { value: 1, confidence: null },
      label: { value: `c${String(c).padStart(4, '0')}`, confidence: null },
      score: { value: null, confidence: null },
    }));
    // Segments of 1000 distinct classes each: c0000-c0009 are seen three times, the others twice.
    const label = profileOf(rows, [1_010, 2_010]).targets[1];
    expect(label.kind).toBe('categorical');
    expect(label.classes).toHaveLength(CLASSES_LISTED);
    expect(label.classes!.slice(0, 11)).toEqual([...Array.from({ length: 10 }, (_, i) => ({ value: `c000${i}`, count: 3 })), { value: 'c0010', count: 2 }]);
    expect(label.count).toBe(3_010);
    expect(label.otherClasses).toBe(label.count - label.classes!.reduce((n, c) => n + c.count, 0));
    // A target of nulls only: numeric, with nothing to summarize.
    expect(profileOf(rows).targets[2]).toMatchObject({ kind: 'numeric', count: 0, nulls: 3_010, numeric: null, confidence: null });
  });

  it('a segment of many distinct numbers keeps no classes of them, so its done marker stays small', () => {
    const many: Answer[] = Array.from({ length: CLASSES_KEPT + 1 }, (_, i) => ({
      price: { value: i, confidence: null },
      label: { value: 'a', confidence: null },
      score: { value: i / 7, confidence: null },
    }));
    const stored = new ProfileAccumulator(SCHEMA, []);
    for (const r of many) stored.add(predictions(r));
    const json = stored.toJSON();
    // Numbers are classes only by their exact counts, which stop past EXACT_VALUES distinct values.
    expect(json.targets[2]).toMatchObject({ classes: [], otherClasses: 0, numbers: { values: null } });
    expect(JSON.stringify(json).length).toBeLessThan(20_000);
    // Still numeric, and a categorical segment after it makes its numbers other.
    expect(profileOf(many).targets[2]).toMatchObject({ kind: 'numeric', numeric: { count: CLASSES_KEPT + 1 } });
    const words = [{ ...many[0], score: { value: 'w', confidence: null } }];
    const score = mergeProfiles(SCHEMA, [segment(many), segment(words)]).profile!.targets[2];
    expect(score).toMatchObject({ kind: 'categorical', classes: [{ value: 'w', count: 1 }], otherClasses: CLASSES_KEPT + 1 });
  });

  it('one value seen: one histogram bin; values spread over the doubles: finite bin edges', () => {
    const rows = (values: number[]): Answer[] =>
      values.map((value) => ({ price: { value, confidence: null }, label: { value: 'a', confidence: null }, score: { value: 0, confidence: null } }));
    expect(profileOf(rows([3, 3, 3])).targets[0].numeric!.histogram).toEqual([{ lo: 3, hi: 3, count: 3 }]);
    const wide = profileOf(rows([-Number.MAX_VALUE, 0, Number.MAX_VALUE])).targets[0].numeric!;
    expect(wide.histogram.every((b) => Number.isFinite(b.lo) && Number.isFinite(b.hi))).toBe(true);
    // Cells of 2^1016 from -2^1024 on, 26 to a bin: 0 is in the tenth.
    expect(wide.histogram.map((b) => b.count)).toEqual([1, ...Array<number>(8).fill(0), 1, ...Array<number>(9).fill(0), 1]);
    expect(wide.mean).toBe(0);
  });

  it('counts every histogram bin exactly (a recount of its [lo, hi)), whatever the shape', () => {
    const random = mulberry32(23);
    const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const shapes: Record<string, () => number> = {
      uniform: () => random(),
      normal: () => 1000 + 100 * normal(),
      skewed: () => Math.exp(normal()),
      'two-peaked': () => (random() < 0.5 ? 10 + normal() : 20 + 2 * normal()),
      'either sign': () => 3 * normal(),
      'rounded prices': () => Math.round(2000 + 800 * normal()),
      'many equal values': () => Math.min(5, Math.max(1, Math.round(3 + 1.2 * normal()))),
    };
    for (const [shape, draw] of Object.entries(shapes)) {
      const values = Array.from({ length: 30_000 }, draw);
      const rows = values.map((value): Answer => ({
        price: { value, confidence: random() },
        label: { value: 'a', confidence: null },
        score: { value: 0, confidence: null },
      }));
      const target = profileOf(rows, [7_000, 19_000]).targets[0];
      for (const [what, summary, of] of [
        ['value', target.numeric!, values],
        ['confidence', target.confidence!, rows.map((r) => r.price.confidence as number)],
      ] as const) {
        const last = summary.histogram.length - 1;
        summary.histogram.forEach((bin, i) => {
          const exact = of.filter((v) => v >= bin.lo && (v < bin.hi || (i === last && v === bin.hi))).length;
          expect(bin.count, `${shape} ${what} bin ${i} [${bin.lo}, ${bin.hi})`).toBe(exact);
        });
      }
      expect(target.numeric!.histogram.length, shape).toBeGreaterThanOrEqual(HISTOGRAM_BINS - 2);
      if (shape === 'many equal values') expect(target.numeric!.distribution?.values).toHaveLength(5);
    }
  });

  it('shares sketch buckets among equal bins for segments scored before the grid histogram (0.4)', () => {
    const random = mulberry32(5);
    const values = Array.from({ length: 5_000 }, () => 100 + 50 * random());
    const rows = values.map((value): Answer => ({
      price: { value, confidence: null },
      label: { value: 'a', confidence: null },
      score: { value: 0, confidence: null },
    }));
    const acc = new ProfileAccumulator(SCHEMA, []);
    for (const r of rows) acc.add(predictions(r));
    const stored = acc.toJSON() as unknown as { targets: { numbers: { grid?: unknown } | null }[] };
    delete stored.targets[0].numbers!.grid;
    const { profile } = mergeProfiles(SCHEMA, [segmentProfileSchema.parse(JSON.parse(JSON.stringify(stored)))]);
    const numeric = profile!.targets[0].numeric!;
    expect(numeric.distribution?.grid).toBeNull();
    expect(numeric.histogram).toHaveLength(HISTOGRAM_BINS);
    expect(numeric.histogram.reduce((n, b) => n + b.count, 0)).toBe(values.length);
    // Uniform: each of the 20 bins about 250 rows.
    for (const bin of numeric.histogram) expect(Math.abs(bin.count - 250)).toBeLessThan(60);
  });

  it('profiles the input columns as sent: numbers, classes and nulls, the same whatever the split', () => {
    const random = mulberry32(11);
    const sent = Array.from({ length: 2_000 }, (_, i) => [
      i % 7 === 0 ? null : Math.round(500 + 300 * random()),
      ['north', 'south', 'east'][i % 3],
      i % 5 === 0 ? null : 'x',
    ]);
    const profileOfInputs = (cuts: number[]) => {
      const merger = new ProfileMerger(SCHEMA, ['sqft', 'side', 'flag']);
      const ends = [0, ...cuts, sent.length];
      ends.slice(1).forEach((end, i) => {
        const acc = new ProfileAccumulator(SCHEMA, ['sqft', 'side', 'flag']);
        for (const values of sent.slice(ends[i], end)) acc.addInputs(values);
        merger.add(segmentProfileSchema.parse(JSON.parse(JSON.stringify(acc.toJSON()))), i);
      });
      return merger.result().profile!.inputs!;
    };
    const inputs = profileOfInputs([300, 1_200]);
    expect(profileOfInputs([])).toEqual(inputs);
    const sqft = sent.map((v) => v[0]).filter((v): v is number => v !== null);
    expect(inputs[0]).toMatchObject({ column: 'sqft', kind: 'numeric', count: sqft.length, nulls: 2_000 - sqft.length, classes: null });
    expect(inputs[0].numeric).toMatchObject({ min: Math.min(...sqft), max: Math.max(...sqft) });
    expect(inputs[1]).toMatchObject({ column: 'side', kind: 'categorical', count: 2_000, nulls: 0, numeric: null, otherClasses: 0 });
    // i % 3: 667 rows each of north and south, 666 of east; ties by value.
    expect(inputs[1].classes).toEqual([
      { value: 'north', count: 667 },
      { value: 'south', count: 667 },
      { value: 'east', count: 666 },
    ]);
    expect(inputs[2]).toMatchObject({ column: 'flag', kind: 'categorical', count: 1_600, nulls: 400, classes: [{ value: 'x', count: 1_600 }] });
  });

  it('has no input profile when a segment was scored by a release that kept none (before 0.4)', () => {
    const acc = new ProfileAccumulator(SCHEMA, ['sqft']);
    acc.addInputs([1]);
    const stored = acc.toJSON();
    delete stored.inputs;
    const merger = new ProfileMerger(SCHEMA, ['sqft']);
    merger.add(segmentProfileSchema.parse(JSON.parse(JSON.stringify(stored))), 0);
    expect(merger.result().profile!.inputs).toBeNull();
  });

  it('is null, with a warning, when a segment was scored by a release that kept none', () => {
    const { profile, warning } = mergeProfiles(SCHEMA, [segment([]), null, null]);
    expect(profile).toBeNull();
    expect(warning).toMatch(/^2 of 3 segments \(1, 2\) were scored by an earlier release, which kept no prediction profile/);
  });

  it('refuses a stored sketch that is damaged or of another accuracy', () => {
    const stored = new ProfileAccumulator(SCHEMA, []);
    stored.add(predictions({ price: { value: 1, confidence: 0.5 }, label: { value: 'a', confidence: null }, score: { value: 2, confidence: 3 } }));
    const json = stored.toJSON();
    const damaged = structuredClone(json);
    damaged.targets[0].numbers!.sketch = 'AAAA';
    expect(segmentProfileSchema.safeParse(damaged).success).toBe(false);
    expect(segmentProfileSchema.safeParse({ ...json, relativeAccuracy: 0.02 }).success).toBe(false);
    expect(segmentProfileSchema.safeParse(json).success).toBe(true);
  });
});
