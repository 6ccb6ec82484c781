import { z } from 'zod';

/** Cells a grid histogram keeps at most: its span of values is cut into at least half as many. */
export const GRID_CELLS = 512;
/** The finest cell width, 2^-1000: finer would add nothing a double can tell apart at a useful scale. */
const FINEST = -1000;
/** The coarsest, 2^1023: wide enough for any two finite doubles once counted in halves. */
const COARSEST = 1023;

const count = z.int().min(0);

/**
 * A grid histogram as a done marker and a manifest keep it: cells of width 2^scale, the first
 * holding values v with floor(v / 2^scale) = first, and their counts.
 */
export const gridHistogramStateSchema = z.object({
  scale: z.int().min(FINEST).max(COARSEST),
  first: z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER),
  counts: z.array(count).min(1).max(GRID_CELLS),
});
/** The same, read back as a GridHistogram. */
export const gridHistogramSchema = gridHistogramStateSchema.transform((state) => GridHistogram.of(state.scale, state.first, state.counts));
export type GridHistogramState = z.input<typeof gridHistogramSchema>;

/**
 * Counts of numbers in equal cells on a fixed grid: cell i holds the values in
 * [i·2^scale, (i+1)·2^scale). The scale is the smallest for which every value seen fits in
 * GRID_CELLS cells, so a run's cells are a few hundredths of its range or finer however its values
 * are spread, and, the grid being fixed, the histograms of two segments (or two runs) add up cell
 * by cell: the result is the same whatever the split. Where a sketch of relative accuracy keeps
 * buckets as wide as 2% of a value (half a bin of a histogram of 20 over 1000 ± 100), the grid's
 * cells stay narrow wherever the values are, so bins drawn from it are within a few rows.
 */
export class GridHistogram {
  /** 2^scale, kept beside it: a power computed per value was a third of a profile's cost. */
  private width: number;

  private constructor(
    private scale: number,
    /** Index of cells[0]; meaningless while nothing is counted. */
    private first: number,
    private cells: number[],
  ) {
    this.width = 2 ** scale;
  }

  private setScale(scale: number): void {
    this.scale = scale;
    this.width = 2 ** scale;
  }

  static empty(): GridHistogram {
    return new GridHistogram(FINEST, 0, []);
  }

  /** Read back from its state; the counts are taken as they are (the schema checked them). */
  static of(scale: number, first: number, counts: number[]): GridHistogram {
    return new GridHistogram(scale, first, [...counts]);
  }

  get total(): number {
    let n = 0;
    for (const c of this.cells) n += c;
    return n;
  }

  add(value: number, n = 1): void {
    const { cells } = this;
    // Most values fall in a cell already kept.
    const i = this.indexOf(value) - this.first;
    if (i >= 0 && i < cells.length) {
      cells[i] += n;
      return;
    }
    if (cells.length === 0) {
      // Alone, a value fits at any scale at which its index is exact: start a little finer than
      // that (log2 may round up) and coarsen to the finest such, so the scale depends on the values
      // only, never on their order. Zero fits at every scale.
      this.setScale(value === 0 ? FINEST : Math.max(FINEST, Math.min(COARSEST, Math.floor(Math.log2(Math.abs(value))) - 54)));
      while (!this.fits(this.indexOf(value))) this.coarsen();
    }
    let at = this.indexOf(value);
    while (!this.fits(at)) {
      this.coarsen();
      at = this.indexOf(value);
    }
    this.put(at, n);
  }

  /** Adds another histogram's counts, each cell at its place on the coarser of the two grids. */
  merge(other: GridHistogram): void {
    if (other.cells.length === 0) return;
    const from = other.copy();
    if (this.cells.length === 0) {
      this.setScale(from.scale);
      [this.first, this.cells] = [from.first, from.cells];
      return;
    }
    while (from.scale < this.scale) from.coarsen();
    while (this.scale < from.scale) this.coarsen();
    while (Math.max(this.last, from.last) - Math.min(this.first, from.first) + 1 > GRID_CELLS) {
      this.coarsen();
      from.coarsen();
    }
    from.cells.forEach((n, i) => {
      if (n > 0) this.put(from.first + i, n);
    });
  }

  /** Index of the last cell kept. */
  private get last(): number {
    return this.first + this.cells.length - 1;
  }

  /** The counts per cell with each cell's range; cells are [lo, hi). */
  cellRanges(): { lo: number; hi: number; count: number }[] {
    const { width } = this;
    return this.cells.map((count, i) => ({ lo: (this.first + i) * width, hi: (this.first + i + 1) * width, count }));
  }

  /**
   * The cells in at most `n` bins of whole cells, as many in each but the last: a bin's count is
   * exactly the number of values in its [lo, hi), since no value is ever split between cells.
   */
  bins(n: number): { lo: number; hi: number; count: number }[] {
    const cells = this.cellRanges();
    const per = Math.ceil(cells.length / n);
    const bins = [];
    for (let i = 0; i < cells.length; i += per) {
      const group = cells.slice(i, i + per);
      bins.push({ lo: group[0].lo, hi: group[group.length - 1].hi, count: group.reduce((sum, c) => sum + c.count, 0) });
    }
    return bins;
  }

  /**
   * Two histograms' counts on one grid, the coarser of theirs, over the cells either holds:
   * ascending, each cell's range and its count in each. What comparisons of two runs' values
   * share, with no value split between cells.
   */
  static common(a: GridHistogram, b: GridHistogram): { lo: number; hi: number; a: number; b: number }[] {
    const [x, y] = [a.copy(), b.copy()];
    while (x.scale < y.scale) x.coarsen();
    while (y.scale < x.scale) y.coarsen();
    const counts = new Map<number, { a: number; b: number }>();
    const at = (i: number) => counts.get(i) ?? counts.set(i, { a: 0, b: 0 }).get(i)!;
    x.cells.forEach((n, i) => n > 0 && (at(x.first + i).a += n));
    y.cells.forEach((n, i) => n > 0 && (at(y.first + i).b += n));
    const { width } = x;
    return [...counts].sort(([i], [j]) => i - j).map(([i, c]) => ({ lo: i * width, hi: (i + 1) * width, ...c }));
  }

  toJSON(): GridHistogramState {
    return { scale: this.scale, first: this.first, counts: [...this.cells] };
  }

  private copy(): GridHistogram {
    return new GridHistogram(this.scale, this.first, [...this.cells]);
  }

  /** Adds n at cell index `at`, which fits. */
  private put(at: number, n: number): void {
    if (this.cells.length === 0) {
      this.first = at;
      this.cells.push(n);
      return;
    }
    if (at < this.first) {
      this.cells.unshift(...Array<number>(this.first - at).fill(0));
      this.first = at;
    }
    const i = at - this.first;
    while (this.cells.length <= i) this.cells.push(0);
    this.cells[i] += n;
  }

  /** Whether index `at` is exact as a double and within GRID_CELLS of the cells kept. */
  private fits(at: number): boolean {
    if (!(Math.abs(at) <= Number.MAX_SAFE_INTEGER)) return false;
    if (this.cells.length === 0) return true;
    const lo = Math.min(at, this.first);
    const hi = Math.max(at, this.last);
    return hi - lo + 1 <= GRID_CELLS;
  }

  /** Doubles the cell width: cell i goes to floor(i / 2), which is floor(v / 2^(scale + 1)) for its values. */
  private coarsen(): void {
    if (this.scale >= COARSEST) throw new Error(`grid histogram: no scale up to 2^${COARSEST} holds the values`);
    this.setScale(this.scale + 1);
    if (this.cells.length === 0) return;
    const first = Math.floor(this.first / 2);
    const cells = Array<number>(Math.floor(this.last / 2) - first + 1).fill(0);
    this.cells.forEach((n, i) => (cells[Math.floor((this.first + i) / 2) - first] += n));
    this.first = first;
    this.cells = cells;
  }

  /**
   * floor(value / 2^scale). Dividing by a power of two is exact unless the quotient underflows,
   * and a quotient that underflows to zero from a negative value is in (-1, 0): its floor is -1.
   */
  private indexOf(value: number): number {
    const q = value / this.width;
    // + 0: -0 and 0 are one cell, 0.
    return q === 0 && value < 0 ? -1 : Math.floor(q) + 0;
  }
}
