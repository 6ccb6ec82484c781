import { DDSketch } from '@datadog/sketches-js';
import { errorMessage } from '../errors.js';

// The one place DDSketch (@datadog/sketches-js) is used. Its protobuf form is what done markers
// and manifests keep, so a sketch written by an earlier release must still read: the library stays,
// and what this file relies on beyond its documented API (the stores' `bins`, `offset` and
// `add(key, n)`, the writable `count`, `min`, `max` and `zeroCount`, `mapping.gamma` and
// `mapping.value`, a protobuf form that keeps buckets only) is pinned by
// test/unit/quantile-sketch.test.ts, which fails, saying what changed, when an upgrade changes it.

type Store = DDSketch['store'];

/** A count of values somewhere in [lo, hi] (a point where lo = hi). */
export interface Spread {
  lo: number;
  hi: number;
  count: number;
}

/**
 * A mergeable quantile sketch of relative accuracy `relativeAccuracy`: DDSketch, its buckets
 * merged and bounded here. DDSketch's own merge (sketches-js 2.1.1) leaves the negative values
 * out (DataDog/sketches-js#22), and its collapsing stores count a collapsed bucket twice, so
 * neither is used.
 */
export class QuantileSketch {
  private constructor(
    private readonly sketch: DDSketch,
    readonly relativeAccuracy: number,
  ) {}

  static empty(relativeAccuracy: number): QuantileSketch {
    return new QuantileSketch(new DDSketch({ relativeAccuracy }), relativeAccuracy);
  }

  /**
   * A sketch from its text (`toText`), with its exact count, min and max (the protobuf form keeps
   * the buckets only); throws, saying why, when the text is no sketch of `count` values at
   * `relativeAccuracy`.
   */
  static fromText(text: string, relativeAccuracy: number, exact: { count: number; min: number; max: number }): QuantileSketch {
    let sketch: DDSketch;
    try {
      sketch = DDSketch.fromProto(Buffer.from(text, 'base64'));
    } catch (err) {
      throw new Error(`not a DDSketch (${errorMessage(err)})`, { cause: err });
    }
    if (sketch.mapping.gamma !== QuantileSketch.empty(relativeAccuracy).gamma || sketch.count !== exact.count) {
      throw new Error(`not a DDSketch of ${exact.count} values at relative accuracy ${relativeAccuracy}`);
    }
    sketch.min = exact.min;
    sketch.max = exact.max;
    return new QuantileSketch(sketch, relativeAccuracy);
  }

  /** The base of the logarithmic buckets: sketches add up only when theirs are the same. */
  get gamma(): number {
    return this.sketch.mapping.gamma;
  }

  get count(): number {
    return this.sketch.count;
  }

  /** Exact, as values are added and sketches merged. */
  get min(): number {
    return this.sketch.min;
  }

  get max(): number {
    return this.sketch.max;
  }

  /** Adds `value`, `n` times. */
  add(value: number, n = 1): void {
    this.sketch.accept(value, n);
  }

  /** Adds another sketch's values (of the same gamma). */
  merge(other: QuantileSketch): void {
    const [into, from] = [this.sketch, other.sketch];
    addBuckets(into.store, from.store);
    addBuckets(into.negativeStore, from.negativeStore);
    into.zeroCount += from.zeroCount;
    into.count += from.count;
    into.min = Math.min(into.min, from.min);
    into.max = Math.max(into.max, from.max);
  }

  /**
   * The sketch with each store cut to its `buckets` highest keys, the lower buckets counted in
   * the lowest kept. A key ends in max(key, top - buckets + 1), top being the highest key of all
   * the values, however often it was cut before: so a run's sketch is the same whatever its segments.
   */
  bounded(buckets: number): QuantileSketch {
    const out = new DDSketch({ relativeAccuracy: this.relativeAccuracy });
    for (const store of ['store', 'negativeStore'] as const) {
      const from = this.sketch[store];
      let top = -Infinity;
      from.bins.forEach((n, i) => {
        if (n > 0) top = i + from.offset;
      });
      addBuckets(out[store], from, top - buckets + 1);
    }
    out.zeroCount = this.sketch.zeroCount;
    out.count = this.sketch.count;
    out.min = this.sketch.min;
    out.max = this.sketch.max;
    return new QuantileSketch(out, this.relativeAccuracy);
  }

  /** The value of rank p·(count - 1), rounded down: a bucket's value, within the relative accuracy of the exact one. */
  quantile(p: number): number {
    return this.sketch.getValueAtQuantile(p);
  }

  /** The buckets as ranges: a key's bucket is (upper / gamma, upper], its value upper · 2 / (1 + gamma); zeros last. */
  *buckets(): Generator<Spread> {
    const { mapping, store, negativeStore } = this.sketch;
    const upper = (key: number) => (mapping.value(key) * (1 + mapping.gamma)) / 2;
    for (let i = 0; i < store.bins.length; i++) yield { lo: upper(i + store.offset) / mapping.gamma, hi: upper(i + store.offset), count: store.bins[i] };
    for (let i = 0; i < negativeStore.bins.length; i++) {
      yield { lo: -upper(i + negativeStore.offset), hi: -upper(i + negativeStore.offset) / mapping.gamma, count: negativeStore.bins[i] };
    }
    yield { lo: 0, hi: 0, count: this.sketch.zeroCount };
  }

  /** The sketch as done markers and manifests keep it: its protobuf form (`toProto`), in base64. */
  toText(): string {
    return Buffer.from(this.sketch.toProto()).toString('base64');
  }
}

/** Adds one sketch store's buckets to another's, those below `floor` to the bucket `floor`. */
function addBuckets(into: Store, from: Store, floor = -Infinity): void {
  from.bins.forEach((n, i) => {
    if (n > 0) into.add(Math.max(floor, i + from.offset), n);
  });
}
