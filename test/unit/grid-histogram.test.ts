import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GRID_CELLS, GridHistogram, gridHistogramSchema } from '../../src/scoring/grid-histogram.js';

/** Values of every magnitude and sign, denormals and the extremes included. */
const anyValue = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -600, max: 600 }), fc.constantFrom(0, -0, 5e-324, -5e-324));

function histogramOf(values: readonly number[]): GridHistogram {
  const h = GridHistogram.empty();
  for (const v of values) h.add(v);
  return h;
}

describe('GridHistogram', () => {
  it('counts each value in the cell whose [lo, hi) holds it, in at most GRID_CELLS cells, the same whatever the split and order', () => {
    fc.assert(
      fc.property(fc.array(anyValue, { minLength: 1, maxLength: 300 }), fc.array(fc.nat(), { maxLength: 4 }), (values, cuts) => {
        const whole = histogramOf(values);
        const ends = [0, ...cuts.map((c) => c % (values.length + 1)).sort((a, b) => a - b), values.length];
        const parts = ends.slice(1).map((end, i) => histogramOf(values.slice(ends[i], end)));
        const merged = GridHistogram.empty();
        // Merged in reverse, and read back from their stored form, as assembly reads done markers (an empty one is not stored).
        for (const part of parts.reverse()) if (part.total > 0) merged.merge(gridHistogramSchema.parse(JSON.parse(JSON.stringify(part))));
        expect(merged.toJSON()).toEqual(whole.toJSON());
        expect(histogramOf([...values].reverse()).toJSON()).toEqual(whole.toJSON());

        const cells = whole.cellRanges();
        expect(cells.length).toBeLessThanOrEqual(GRID_CELLS);
        expect(whole.total).toBe(values.length);
        // Every value lies in a cell, and each cell's count is the number of values within its bounds.
        for (const v of values) expect(cells.some((c) => c.lo <= v && v < c.hi) || cells.some((c) => c.hi === Infinity && c.lo <= v)).toBe(true);
        for (const c of cells) expect(c.count).toBe(values.filter((v) => c.lo <= v && (v < c.hi || c.hi === Infinity)).length);
      }),
      { numRuns: 300 },
    );
  });

  it('is as fine as GRID_CELLS allows: values over [a, b] get cells narrower than (b - a) / 255', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e12, max: 1e12, noNaN: true }), { minLength: 2, maxLength: 200 }), (values) => {
        const [min, max] = [Math.min(...values), Math.max(...values)];
        fc.pre(max - min > 1e-6 * Math.max(1, Math.abs(max), Math.abs(min)));
        const [cell] = histogramOf(values).cellRanges();
        // One scale finer spans more than GRID_CELLS cells: (b - a) / (w / 2) + 2 > GRID_CELLS.
        expect(cell.hi - cell.lo).toBeLessThan((max - min) / (GRID_CELLS / 2 - 1));
      }),
    );
  });

  it('refuses a stored state past its bounds', () => {
    expect(gridHistogramSchema.safeParse({ scale: -3, first: 0, counts: Array<number>(GRID_CELLS + 1).fill(1) }).success).toBe(false);
    expect(gridHistogramSchema.safeParse({ scale: 2000, first: 0, counts: [1] }).success).toBe(false);
    expect(gridHistogramSchema.safeParse({ scale: 0, first: 2 ** 60, counts: [1] }).success).toBe(false);
    expect(gridHistogramSchema.safeParse({ scale: 0, first: 0, counts: [-1] }).success).toBe(false);
  });
});
