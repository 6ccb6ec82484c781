// QuantileSketch is DDSketch (@datadog/sketches-js) behind one file. These tests pin what it relies
// on of the library beyond its documented API, and the form done markers and manifests keep, so
// that an upgrade changing either fails here, saying what, rather than in a resumed run. The
// properties check the sketch against brute force: exact counts and ends, quantiles within the
// relative accuracy, and merged segments equal to one sketch of all their values.
import { readFileSync } from 'node:fs';
import { DDSketch } from '@datadog/sketches-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QuantileSketch } from '../../src/scoring/quantile-sketch.js';

const ACCURACY = 0.01;
/** A sketch of 1, 2, 2, -3 and 0 at 1% as sketches-js 2.1.1 writes it: the form of every release's done markers so far. */
const STORED = readFileSync(new URL('../fixtures/ddsketch-0.01-five-values.b64', import.meta.url), 'utf8').trim();

function sketchOf(values: readonly number[]): QuantileSketch {
  const sketch = QuantileSketch.empty(ACCURACY);
  for (const v of values) sketch.add(v);
  return sketch;
}

/** The value of rank p·(count - 1), rounded down, among the values sorted: what quantile(p) estimates. */
function exactQuantile(sorted: readonly number[], p: number): number {
  return sorted[Math.floor(p * (sorted.length - 1))];
}

describe('DDSketch, as QuantileSketch relies on it', () => {
  it('keeps its buckets in dense stores QuantileSketch reads and adds to by key, and its counts and ends in writable fields', () => {
    const sketch = new DDSketch({ relativeAccuracy: ACCURACY });
    for (const v of [1, 2, -3, 0]) sketch.accept(v);
    const why = 'QuantileSketch (src/scoring/quantile-sketch.ts) merges and bounds stores through these: adapt it to the new internals';
    for (const store of [sketch.store, sketch.negativeStore]) {
      expect(Array.isArray(store.bins), why).toBe(true);
      expect(store.offset, why).toBeTypeOf('number');
      expect(typeof store.add, why).toBe('function');
      expect(
        store.bins.reduce((a, n) => a + n, 0),
        why,
      ).toBe(store === sketch.store ? 2 : 1);
    }
    expect([sketch.count, sketch.zeroCount, sketch.min, sketch.max], why).toEqual([4, 1, -3, 2]);
    const key = sketch.store.bins.findIndex((n) => n > 0) + sketch.store.offset;
    sketch.store.add(key, 2);
    Object.assign(sketch, { count: 6, min: -5, max: 7 });
    expect([sketch.store.bins.reduce((a, n) => a + n, 0), sketch.count, sketch.min, sketch.max], why).toEqual([4, 6, -5, 7]);
    expect(sketch.mapping.gamma, why).toBeCloseTo((1 + ACCURACY) / (1 - ACCURACY), 12);
    expect(sketch.mapping.value(key), why).toBeCloseTo(1, 1);
  });

  it('still loses negative values in its own merge (DataDog/sketches-js#22), which is why QuantileSketch merges buckets itself', () => {
    const [a, b] = [new DDSketch({ relativeAccuracy: ACCURACY }), new DDSketch({ relativeAccuracy: ACCURACY })];
    for (const v of [-5, 5]) a.accept(v);
    for (const v of [-7, 7]) b.accept(v);
    a.merge(b);
    expect(
      a.negativeStore.bins.reduce((n, c) => n + c, 0),
      'DDSketch.merge now keeps negative values: QuantileSketch.merge might use it (its collapsing stores counted a collapsed bucket twice too: check)',
    ).toBe(1);
  });
});

describe('QuantileSketch', () => {
  it('writes the protobuf form earlier releases wrote, and reads it back, taking count, min and max as given', () => {
    expect(sketchOf([1, 2, 2, -3, 0]).toText(), 'the stored form changed: done markers of earlier releases might not read, or ours not in theirs').toBe(STORED);
    const read = QuantileSketch.fromText(STORED, ACCURACY, { count: 5, min: -3, max: 2 });
    expect([read.count, read.min, read.max]).toEqual([5, -3, 2]);
    for (const [p, value] of [
      [0, -3],
      [0.25, 0],
      [0.5, 1],
      [1, 2],
    ]) {
      expect(Math.abs(read.quantile(p) - value), `quantile ${p}`).toBeLessThanOrEqual(Math.abs(value) * ACCURACY);
    }
  });

  it('refuses a text that is no sketch, or one of another accuracy or count, saying which', () => {
    expect(() => QuantileSketch.fromText('not base64 protobuf!', ACCURACY, { count: 1, min: 0, max: 0 })).toThrow(/^not a DDSketch/);
    const coarse = QuantileSketch.empty(0.05);
    coarse.add(1);
    expect(() => QuantileSketch.fromText(coarse.toText(), ACCURACY, { count: 1, min: 1, max: 1 })).toThrow(
      'not a DDSketch of 1 values at relative accuracy 0.01',
    );
    expect(() => QuantileSketch.fromText(STORED, ACCURACY, { count: 4, min: -3, max: 2 })).toThrow('not a DDSketch of 4 values at relative accuracy 0.01');
  });

  /**
   * A sketch's count, min and max, with -0 as 0: they are one value to a sketch (and to JSON), and
   * which of them an end keeps depends on the order values came in (fast-check found [0, -0]).
   */
  const ends = (s: QuantileSketch) => [s.count, s.min + 0, s.max + 0];

  const values = fc.array(fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: -50, max: 50 }), fc.constant(0)), {
    minLength: 1,
    maxLength: 400,
  });

  it('counts exactly, keeps the exact ends, and gives quantiles within its relative accuracy of the exact ones', () => {
    fc.assert(
      fc.property(values, (xs) => {
        const sketch = sketchOf(xs).bounded(2048);
        const sorted = [...xs].sort((a, b) => a - b);
        expect(ends(sketch)).toEqual([xs.length, sorted[0] + 0, sorted[sorted.length - 1] + 0]);
        for (const p of [0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1]) {
          const exact = exactQuantile(sorted, p);
          // Values below about 1e-9 in magnitude share the sketch's lowest bucket.
          expect(Math.abs(sketch.quantile(p) - exact)).toBeLessThanOrEqual(Math.abs(exact) * ACCURACY + 1e-9);
        }
        const buckets = [...sketch.buckets()];
        expect(buckets.reduce((n, b) => n + b.count, 0)).toBe(xs.length);
        for (const b of buckets) if (b.count > 0) expect(b.lo).toBeLessThanOrEqual(b.hi);
      }),
    );
  });

  it('merges segments into the sketch of all their values, whatever the cut, negative values included', () => {
    fc.assert(
      fc.property(values, fc.array(fc.nat(), { maxLength: 4 }), (xs, cuts) => {
        const at = [...new Set(cuts.map((c) => c % (xs.length + 1)))].sort((a, b) => a - b);
        const parts = [0, ...at, xs.length].slice(1).map((end, i, ends) => xs.slice(i === 0 ? 0 : ends[i - 1], end));
        const merged = QuantileSketch.empty(ACCURACY);
        for (const part of parts.filter((p) => p.length > 0)) merged.merge(sketchOf(part).bounded(2048));
        const whole = sketchOf(xs);
        expect(merged.bounded(2048).toText()).toBe(whole.bounded(2048).toText());
        expect(ends(merged)).toEqual(ends(whole));
      }),
    );
  });
});
