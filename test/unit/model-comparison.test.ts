import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InputRow } from '../../src/formats/row-parser.js';
import {
  ComparisonAccumulator,
  comparedMembers,
  comparisonSummary,
  comparisonSummarySchema,
  ROWS_SHOWN,
  segmentComparisonSchema,
} from '../../src/scoring/model-comparison.js';
import { buildOutputSchema, predictionMembers } from '../../src/scoring/output-schema.js';

/** `price` with an interval (value, confidence, min, max, anomaly), `label` without (value, confidence, anomaly). */
const SCHEMA = buildOutputSchema(
  ['price', 'label'],
  { price: 1, price_confidence: 1, price_min: 0, price_max: 2, label: 'a', label_confidence: 1 },
  [],
  predictionMembers(undefined, false),
);

interface Pair {
  price: [number, number];
  label: [string, string];
  /** The other model did not answer the row. */
  missing: boolean;
}

const pair: fc.Arbitrary<Pair> = fc.record({
  price: fc.tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 })),
  label: fc.tuple(fc.constantFrom('a', 'b'), fc.constantFrom('a', 'b')),
  missing: fc.boolean(),
});

/** A segment's comparison of these rows (numbered from `first`), stored and read back as a done marker. */
function segment(pairs: readonly Pair[], first: number) {
  const acc = new ComparisonAccumulator(SCHEMA);
  pairs.forEach((p, i) => {
    const row: InputRow = { index: first + i, line: first + i + 2, text: `row ${first + i}` };
    const value: Record<string, unknown> = { price: p.price[0], price_min: p.price[0] - 1, price_max: p.price[0] + 1, label: p.label[0] };
    const predictions = SCHEMA.targets.flatMap((t) => t.columns.map((c) => value[c.member] ?? 0.5));
    // comparedMembers order: price, price_min, price_max, label.
    acc.add(row, predictions, p.missing ? null : [p.price[1], p.price[1] - 2, p.price[1] + 2, p.label[1]]);
  });
  return segmentComparisonSchema.parse(JSON.parse(JSON.stringify(acc.toJSON())));
}

describe('ComparisonAccumulator', () => {
  it('reads the value and the ends of an interval target, then the row id', () => {
    expect(comparedMembers(SCHEMA, '__mindsdb_row_id')).toEqual(['price', 'price_min', 'price_max', 'label', '__mindsdb_row_id']);
  });

  it('counts agreement exactly and keeps the rows that differ most, the same whatever the split into segments', () => {
    fc.assert(
      fc.property(fc.array(pair, { maxLength: 200 }), fc.nat(), (pairs, cut) => {
        const at = pairs.length === 0 ? 0 : cut % (pairs.length + 1);
        const whole = new ComparisonAccumulator(SCHEMA);
        whole.merge(segment(pairs, 0), 0);
        const split = new ComparisonAccumulator(SCHEMA);
        split.merge(segment(pairs.slice(0, at), 0), 0);
        split.merge(segment(pairs.slice(at), at), 1);
        const c = whole.summary('m', 'o');
        expect(split.summary('m', 'o')).toEqual(c);

        const [price, label] = c.targets;
        const answered = pairs.filter((p) => !p.missing);
        expect(c.unanswered).toBe(pairs.length - answered.length);
        expect(price.compared).toBe(answered.length);
        expect(price.agreed).toBe(answered.filter((p) => p.price[0] === p.price[1]).length);
        expect(label.agreed).toBe(answered.filter((p) => p.label[0] === p.label[1]).length);
        expect(price.minShift?.count ?? 0).toBe(answered.length);
        // Integers: the exact sum of |difference| over them, whatever the split.
        const absolute = answered.reduce((sum, p) => sum + Math.abs(p.price[1] - p.price[0]), 0);
        expect(price.meanAbsDifference).toBe(answered.length === 0 ? null : absolute / answered.length);
        expect(label.meanAbsDifference).toBeNull();
        // The largest |difference| first, ties by row; classes: the first differing rows.
        const differing = pairs.map((p, i) => ({ row: i + 1, size: p.missing ? 0 : Math.abs(p.price[1] - p.price[0]) })).filter((d) => d.size > 0);
        const expected = differing.sort((a, b) => b.size - a.size || a.row - b.row).slice(0, ROWS_SHOWN);
        expect(price.rows.map((r) => r.row)).toEqual(expected.map((d) => d.row));
        expect(label.rows.map((r) => r.row)).toEqual(
          pairs
            .map((p, i) => (p.missing || p.label[0] === p.label[1] ? 0 : i + 1))
            .filter((r) => r > 0)
            .slice(0, ROWS_SHOWN),
        );
      }),
    );
  });

  it('counts rows the other model did not answer apart, and refuses a segment comparing other targets', () => {
    const acc = new ComparisonAccumulator(SCHEMA);
    acc.add({ index: 0, line: 2, text: 'x' }, [1, 0.5, 0, 2, null, 'a', 0.5, null], null);
    expect(acc.summary('m', 'o')).toMatchObject({ unanswered: 1, targets: [{ compared: 0, agreement: null }, { compared: 0 }] });
    const stored = segment([], 0);
    stored.targets.reverse();
    expect(() => acc.merge(stored, 3)).toThrow(/segment 3's done marker compares the targets label, price/);
  });

  it('gives no mean |difference| once a segment of an earlier release, which kept no sum of it, is merged', () => {
    const acc = new ComparisonAccumulator(SCHEMA);
    const current = segment([{ price: [1, 4], label: ['a', 'a'], missing: false }], 0);
    acc.merge(current, 0);
    expect(acc.summary('m', 'o').targets[0].meanAbsDifference).toBe(3);
    const earlier = segment([{ price: [1, 2], label: ['a', 'a'], missing: false }], 1);
    for (const t of earlier.targets) delete t.absoluteSum;
    acc.merge(earlier, 1);
    expect(acc.summary('m', 'o').targets[0]).toMatchObject({ compared: 2, meanAbsDifference: null });
  });

  it("reads the manifest's comparison of an earlier release, which had no mean |difference|", () => {
    const acc = new ComparisonAccumulator(SCHEMA);
    acc.merge(segment([{ price: [1, 4], label: ['a', 'b'], missing: false }], 0), 0);
    const written = comparisonSummary(acc.summary('m', 'o'));
    const earlier = { ...written, targets: written.targets.map(({ meanAbsDifference: _mean, ...t }) => t) };
    expect(comparisonSummarySchema.parse(JSON.parse(JSON.stringify(earlier)))).toEqual(earlier);
    expect(comparisonSummarySchema.parse(JSON.parse(JSON.stringify(written))).targets.map((t) => t.meanAbsDifference)).toEqual([3, null]);
  });
});
