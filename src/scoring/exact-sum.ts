/**
 * A sum of doubles without rounding error (Shewchuk's algorithm, as Python's `math.fsum`), kept as
 * non-overlapping partials: the sums of any split of the same numbers, added together, round to
 * the same double. So a mean does not depend on how a run was cut into segments. A sum that
 * passes ±Number.MAX_VALUE is held there, so it stays a JSON number.
 */
export class ExactSum {
  /**
   * Non-overlapping, in increasing magnitude; only the first `n` count. Doubles span 2098 bits of
   * exponent, at least 53 per partial, so there are never more than 40: a fixed typed array, which
   * adding never reallocates nor boxes into.
   */
  private readonly partials = new Float64Array(64);
  private n = 0;

  /** A sum of stored partials (see `parts`). */
  static of(parts: readonly number[]): ExactSum {
    const sum = new ExactSum();
    for (const p of parts) sum.add(p);
    return sum;
  }

  /** The sum's partials, as stored beside a segment's profile: their exact total is the sum. */
  parts(): number[] {
    return Array.from(this.partials.subarray(0, this.n));
  }

  add(value: number): void {
    const p = this.partials;
    // A float from the start: optimized code then keeps x unboxed, where a tagged start boxes every sum.
    let x = +value;
    let i = 0;
    for (let j = 0; j < this.n; j++) {
      let y = p[j];
      if (Math.abs(x) < Math.abs(y)) {
        const t = x;
        x = y;
        y = t;
      }
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) p[i++] = lo;
      x = hi;
    }
    if (!Number.isFinite(x)) {
      x = x > 0 ? Number.MAX_VALUE : -Number.MAX_VALUE;
      i = 0;
    }
    p[i] = x;
    this.n = i + 1;
  }

  /** The sum, correctly rounded. */
  value(): number {
    const p = this.partials;
    let n = this.n;
    if (n === 0) return 0;
    let hi = p[--n];
    let lo = 0;
    while (n > 0) {
      const x = hi;
      const y = p[--n];
      hi = x + y;
      lo = y - (hi - x);
      if (lo !== 0) break;
    }
    // Round half to even across the partials left, as fsum does.
    if (n > 0 && ((lo < 0 && p[n - 1] < 0) || (lo > 0 && p[n - 1] > 0))) {
      const y = lo * 2;
      const x = hi + y;
      if (y === x - hi) hi = x;
    }
    return hi;
  }
}
