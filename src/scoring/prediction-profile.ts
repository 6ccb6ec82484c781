import { z } from 'zod';
import { errorMessage, RunFolderError } from '../errors.js';
import { ExactSum } from './exact-sum.js';
import { GridHistogram, gridHistogramSchema, gridHistogramStateSchema } from './grid-histogram.js';
import type { OutputSchema } from './output-schema.js';
import { QuantileSketch, type Spread } from './quantile-sketch.js';

/** The quantile sketch's relative accuracy: a quantile is within 1% of the exact one. */
export const RELATIVE_ACCURACY = 0.01;
/** The quantiles a numeric summary gives. */
export const PROFILE_QUANTILES: readonly number[] = [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99];
/**
 * Buckets a stored or summarized sketch keeps, for positive and for negative values: 2048 cover
 * magnitudes down to about 6e17 times below the largest; smaller ones are counted in the lowest
 * bucket kept, so a done marker's sketch stays within a few tens of kilobytes whatever the values.
 */
export const SKETCH_BUCKETS = 2048;
/** Equal-width bins of a numeric summary's histogram. */
export const HISTOGRAM_BINS = 20;
/**
 * Distinct numbers counted exactly, beside the sketch: a target of few values (ratings, counts,
 * rounded prices) has an exact histogram, exact quantiles and exact drift however its values
 * straddle the sketch's buckets. Past it, only the sketch counts.
 */
export const EXACT_VALUES = 256;
/** Distinct classes a segment keeps per target; rows of the others are counted as other, so memory stays flat. */
export const CLASSES_KEPT = 1000;
/** Distinct classes kept while merging segments; past it, all but the CLASSES_KEPT most frequent become other. */
const CLASSES_MERGED = 10 * CLASSES_KEPT;
/** Classes the manifest lists per target, most frequent first. */
export const CLASSES_LISTED = 50;

const count = z.int().min(0);

export const numericSummarySchema = z.object({
  count: z.int().min(1),
  /** Exact, as are count and mean. */
  min: z.number(),
  max: z.number(),
  /** The exact sum over count, whatever the segments (see ExactSum). */
  mean: z.number(),
  /**
   * From the sketch: within `relativeAccuracy` of the exact quantile (of a magnitude within the
   * sketch's reach of the largest, see SKETCH_BUCKETS), and within [min, max].
   */
  quantiles: z.array(z.object({ p: z.number(), value: z.number() })),
  /**
   * At most HISTOGRAM_BINS bins from min to max (one when min = max), a value v in
   * the bin with lo <= v < hi (the last one's hi included). Each count is exact: the bins are made
   * of whole cells of the run's grid histogram (see `distribution`), so the edges fall on that
   * grid: all as wide, but the first, whose lo is min, and the last, whose hi is max. Runs
   * with segments scored before 0.4 share each sketch bucket's count among the equal bins its
   * range overlaps instead: estimates that add up to count.
   */
  histogram: z.array(z.object({ lo: z.number(), hi: z.number(), count })),
  /**
   * What comparisons between runs (drift, `compare`) are computed from: the values on a fine grid
   * (see GridHistogram; null when a segment was scored by a release before 0.4), and their exact
   * counts, ascending, when there were at most EXACT_VALUES distinct ones (else null). Absent from
   * the manifests of releases before 0.4.
   */
  distribution: z.object({ grid: gridHistogramStateSchema.nullable(), values: z.array(z.tuple([z.number(), count])).nullable() }).optional(),
});
/** What a run's values of one kind (a target's numbers, its confidences) came to. */
export type NumericSummary = z.output<typeof numericSummarySchema>;

const classCountSchema = z.object({ value: z.string(), count: z.int().min(1) });

/** What the values of a target or an input column came to. */
const valuesSummarySchema = z.object({
  /** Numeric when every value was a number (or, for a target, the model answers an interval for it). */
  kind: z.enum(['numeric', 'categorical']),
  /** Rows with a value (scored rows for a target, rows sent for an input column). */
  count,
  /** Rows without one: for a target, count + nulls is the run's rowsScored. */
  nulls: count,
  /** A numeric one's numbers; null when no row had one. */
  numeric: numericSummarySchema.nullable(),
  /**
   * A categorical one's CLASSES_LISTED most frequent values (as text), ties by value. A segment
   * keeps CLASSES_KEPT distinct values: rows of others are counted in otherClasses.
   */
  classes: z.array(classCountSchema).nullable(),
  /** Rows whose value is not among `classes`. */
  otherClasses: count,
});

/**
 * A run's prediction profile, in the manifest: per target, how many scored rows had a value, and
 * what the values and their confidences were. Merged from the segments' profiles in segment order.
 */
export const predictionProfileSchema = z.object({
  relativeAccuracy: z.number(),
  targets: z.array(
    valuesSummarySchema.extend({
      target: z.string(),
      /** Its output column (`pred_` prefixed when it clashed with an input column). */
      column: z.string(),
      /** Numeric confidences; null when the model answered none. */
      confidence: numericSummarySchema.nullable(),
    }),
  ),
  /**
   * The model's input columns as the rows sent them (the row id member aside; every row sent,
   * including those quarantined for their answer), so that a change in the predictions can be
   * traced to the inputs. Null when a segment was scored by a release before 0.4; absent from
   * those releases' manifests.
   */
  inputs: z
    .array(valuesSummarySchema.extend({ column: z.string() }))
    .nullable()
    .optional(),
});
export type PredictionProfile = z.output<typeof predictionProfileSchema>;

/**
 * Numbers seen: the sketch (which counts them and keeps min and max as it takes them), their
 * exact sum, and their exact counts while there are at most EXACT_VALUES distinct ones.
 *
 * Numbers added one by one are only counted exactly while they are that few, and go into the
 * sketch, sum and grid each with its count once they are more, or once anything reads them
 * (`settle`): the sketch's logarithm, the sum and the grid per value were most of what the profile
 * cost a row, and a column of few values (a count of rooms) needs none of them until the end. They
 * hold the same counts and exact sum either way.
 */
export class Numbers {
  /** Whether the values added are so far counted in `exact` alone (a new accumulator's are). */
  private deferred: boolean;

  constructor(
    private readonly sketch: QuantileSketch = newSketch(),
    private readonly sum: ExactSum = new ExactSum(),
    /** Count by value; null once more than EXACT_VALUES distinct values were seen. */
    private exact: Map<number, number> | null = new Map(),
    /** The values on a fine grid; null once a segment scored by a release before 0.4 was merged. */
    private grid: GridHistogram | null = GridHistogram.empty(),
  ) {
    this.deferred = exact !== null && exact.size === 0 && sketch.count === 0;
  }

  get count(): number {
    this.settle();
    return this.sketch.count;
  }

  add(value: number): void {
    if (this.deferred) {
      const exact = this.exact!;
      exact.set(value, (exact.get(value) ?? 0) + 1);
      if (exact.size > EXACT_VALUES) {
        this.settle();
        this.exact = null;
      }
      return;
    }
    this.sketch.add(value);
    this.sum.add(value);
    if (this.exact !== null) this.countExactly(value, 1);
    this.grid?.add(value);
  }

  /** Puts the values only counted so far (see `deferred`) into the sketch, sum and grid. */
  private settle(): void {
    if (!this.deferred) return;
    this.deferred = false;
    for (const [value, n] of this.exact!) {
      this.sketch.add(value, n);
      for (let i = 0; i < n; i++) this.sum.add(value);
      this.grid?.add(value, n);
    }
  }

  private countExactly(value: number, n: number): void {
    // -0 and 0 are one value (a Map keeps them apart only by SameValueZero, which joins them already).
    const exact = this.exact!;
    exact.set(value, (exact.get(value) ?? 0) + n);
    if (exact.size > EXACT_VALUES) this.exact = null;
  }

  merge(other: Numbers): void {
    this.settle();
    other.settle();
    this.sketch.merge(other.sketch);
    for (const part of other.sum.parts()) this.sum.add(part);
    if (other.exact === null) this.exact = null;
    else for (const [value, n] of other.exact) if (this.exact !== null) this.countExactly(value, n);
    if (other.grid === null) this.grid = null;
    else this.grid?.merge(other.grid);
  }

  /** The exact counts by value, ascending, or null past EXACT_VALUES distinct values. */
  values(): [number, number][] | null {
    return this.exact === null ? null : [...this.exact].sort((a, b) => a[0] - b[0]);
  }

  toJSON(): z.input<typeof numbersStateSchema> | null {
    this.settle();
    const { count, min, max } = this.sketch;
    if (count === 0) return null;
    return {
      count,
      min,
      max,
      sum: this.sum.parts(),
      sketch: this.sketch.bounded(SKETCH_BUCKETS).toText(),
      values: this.values(),
      grid: this.grid?.toJSON() ?? null,
    };
  }

  summary(): NumericSummary | null {
    this.settle();
    const { count, min, max } = this.sketch;
    if (count === 0) return null;
    const sketch = this.sketch.bounded(SKETCH_BUCKETS);
    const values = this.values();
    // Sketch values are bucket midpoints, which may lie just past the exact ends.
    const clamp = (value: number) => Math.min(max, Math.max(min, value));
    return {
      count,
      min,
      max,
      mean: clamp(this.sum.value() / count),
      quantiles: PROFILE_QUANTILES.map((p) => ({ p, value: values ? exactQuantile(values, count, p) : clamp(sketch.quantile(p)) })),
      histogram: this.grid ? gridHistogram(this.grid, min, max) : spreadHistogram(min, max, count, sketch.buckets()),
      distribution: { grid: this.grid?.toJSON() ?? null, values },
    };
  }
}

/**
 * The value of rank p·(count - 1), rounded down, among values counted exactly (ascending): the
 * sketch's own rank rule, so that exact and sketched quantiles mean the same thing.
 */
function exactQuantile(values: readonly [number, number][], count: number, p: number): number {
  const rank = Math.floor(p * (count - 1));
  let seen = 0;
  for (const [value, n] of values) {
    seen += n;
    if (seen > rank) return value;
  }
  return values[values.length - 1][0];
}

function newSketch(): QuantileSketch {
  return QuantileSketch.empty(RELATIVE_ACCURACY);
}

/**
 * HISTOGRAM_BINS equal-width bins over [min, max] (min < max), and the bin a value in [min, max]
 * falls in. Computed in halves, so that a span past Number.MAX_VALUE stays finite.
 */
function equalBins(min: number, max: number) {
  const half = max / 2 - min / 2;
  const edge = (i: number) => (i === HISTOGRAM_BINS ? max : min + half * (i / HISTOGRAM_BINS) + half * (i / HISTOGRAM_BINS));
  const bins = Array.from({ length: HISTOGRAM_BINS }, (_, i) => ({ lo: edge(i), hi: edge(i + 1), count: 0 }));
  const binOf = (value: number) => {
    const at = Math.floor(((value / 2 - min / 2) / half) * HISTOGRAM_BINS);
    // NaN where the halves underflow to 0 (min and max two denormals apart): the end the value is at.
    if (Number.isNaN(at)) return value > min ? HISTOGRAM_BINS - 1 : 0;
    return Math.max(0, Math.min(HISTOGRAM_BINS - 1, at));
  };
  return { bins, binOf };
}

/**
 * The grid's cells in HISTOGRAM_BINS bins or fewer, the ends clipped to the exact min and max
 * (no value lies beyond them): each bin's count is exact.
 */
function gridHistogram(grid: GridHistogram, min: number, max: number): NumericSummary['histogram'] {
  if (min === max) return [{ lo: min, hi: max, count: grid.total }];
  const bins = grid.bins(HISTOGRAM_BINS);
  bins[0].lo = min;
  // max on a cell's lower edge: that cell's bin would be [max, max], so its values join the bin before.
  const last = bins[bins.length - 1];
  if (last.lo === max && bins.length > 1) {
    bins.pop();
    bins[bins.length - 1].count += last.count;
  }
  bins[bins.length - 1].hi = max;
  return bins;
}

/**
 * For runs with segments scored before 0.4, which kept no grid histogram: ranges of counted values
 * shared among equal-width bins over [min, max] (which are exact), a range's count going to the
 * bins its range (clipped to [min, max]) overlaps, in proportion to the overlap. The shares are
 * rounded on their running total, so each bin is within one row of its share and the bins add up
 * to count exactly.
 */
function spreadHistogram(min: number, max: number, count: number, ranges: Iterable<Spread>): NumericSummary['histogram'] {
  if (min === max) return [{ lo: min, hi: max, count }];
  const { bins, binOf } = equalBins(min, max);
  const shares = new Float64Array(HISTOGRAM_BINS);
  for (const { lo, hi, count: n } of ranges) {
    if (n === 0) continue;
    const [a, b] = [Math.max(min, lo), Math.min(max, hi)];
    if (!(b > a)) {
      shares[binOf(Math.min(max, Math.max(min, a)))] += n;
      continue;
    }
    for (let i = binOf(a), last = binOf(b); i <= last; i++) {
      const overlap = Math.min(b, bins[i].hi) - Math.max(a, bins[i].lo);
      if (overlap > 0) shares[i] += (n * overlap) / (b - a);
    }
  }
  let total = 0;
  let given = 0;
  for (let i = 0; i < HISTOGRAM_BINS; i++) {
    total += shares[i];
    const upTo = i === HISTOGRAM_BINS - 1 ? count : Math.min(count, Math.round(total));
    bins[i].count = Math.max(0, upTo - given);
    given += bins[i].count;
  }
  return bins;
}

/** A segment's numbers as its done marker keeps them: the sketch as protobuf (`toProto`), in base64. */
export const numbersStateSchema = z
  .object({
    count: z.int().min(1),
    min: z.number(),
    max: z.number(),
    sum: z.array(z.number()),
    sketch: z.string(),
    /** Count by value while there were at most EXACT_VALUES distinct values; absent from done markers before 0.4. */
    values: z
      .array(z.tuple([z.number(), z.int().min(1)]))
      .max(EXACT_VALUES)
      .nullable()
      .optional(),
    /** The values on a fine grid; absent from done markers before 0.4. */
    grid: gridHistogramSchema.nullable().optional(),
  })
  .transform((state, ctx): Numbers => {
    let sketch: QuantileSketch;
    try {
      sketch = QuantileSketch.fromText(state.sketch, RELATIVE_ACCURACY, state);
    } catch (err) {
      ctx.issues.push({ code: 'custom', message: `sketch: ${errorMessage(err)}`, input: state.sketch });
      return z.NEVER;
    }
    const exact = state.values ? new Map(state.values) : null;
    if (exact && [...exact.values()].reduce((a, n) => a + n, 0) !== state.count) {
      ctx.issues.push({ code: 'custom', message: `values: their counts do not add up to ${state.count}`, input: state.values });
      return z.NEVER;
    }
    if (state.grid && state.grid.total !== state.count) {
      ctx.issues.push({ code: 'custom', message: `grid: its counts do not add up to ${state.count}`, input: state.grid });
      return z.NEVER;
    }
    return new Numbers(sketch, ExactSum.of(state.sum), exact, state.grid ?? null);
  });

/**
 * One segment's profile, kept in its done marker and merged at assembly. Both accumulations are
 * kept whatever the values, since a later segment may decide the kind.
 */
const targetStateSchema = z.object({
  /** The target's name, or the input column's. */
  target: z.string(),
  count,
  nulls: count,
  numbers: numbersStateSchema.nullable(),
  classes: z.array(classCountSchema),
  otherClasses: count,
  confidence: numbersStateSchema.nullable(),
});
type TargetState = z.input<typeof targetStateSchema>;

export const segmentProfileSchema = z.object({
  relativeAccuracy: z.literal(RELATIVE_ACCURACY),
  targets: z.array(targetStateSchema),
  /** The model's input columns as sent, in their order; absent from done markers before 0.4. */
  inputs: z.array(targetStateSchema).optional(),
});
export type SegmentProfile = z.output<typeof segmentProfileSchema>;

/** One target's accumulation: where its values are in a row's predictions, and what they came to. */
class TargetProfile {
  count = 0;
  nulls = 0;
  readonly numbers = new Numbers();
  readonly confidence = new Numbers();
  /**
   * Rows by value as answered, numbers aside (a string, a boolean; objects as JSON text), up to
   * CLASSES_KEPT values. A number's class is its count in `numbers`' exact counts: kept twice,
   * every number of a profile was looked up in two maps, most of what the profile cost a run.
   */
  readonly classes = new Map<unknown, number>();
  otherClasses = 0;

  constructor(
    readonly target: string,
    readonly column: string,
    /** The model answers an interval: numeric, whatever its values, so no classes are counted. */
    readonly interval: boolean,
    readonly valueAt: number,
    /** -1 when the schema has no confidence column. */
    readonly confidenceAt: number,
  ) {}

  add(predictions: readonly unknown[]): void {
    const value = predictions[this.valueAt];
    if (value === null || value === undefined) this.nulls++;
    else {
      this.count++;
      if (typeof value === 'number' && Number.isFinite(value)) this.numbers.add(value);
      else if (!this.interval) this.countClass(typeof value === 'object' ? JSON.stringify(value) : value);
    }
    // Never read at -1: an index out of bounds takes V8's slow path, and made it the profile's costliest line.
    if (this.confidenceAt < 0) return;
    const confidence = predictions[this.confidenceAt];
    if (typeof confidence === 'number' && Number.isFinite(confidence)) this.confidence.add(confidence);
  }

  private countClass(key: unknown): void {
    const n = this.classes.get(key);
    if (n !== undefined) this.classes.set(key, n + 1);
    else if (this.classes.size < CLASSES_KEPT) this.classes.set(key, 1);
    else this.otherClasses++;
  }

  toJSON(): TargetState {
    const classes = new Map<string, number>();
    for (const [value, n] of this.classes) classes.set(String(value), (classes.get(String(value)) ?? 0) + n);
    return {
      target: this.target,
      count: this.count,
      nulls: this.nulls,
      numbers: this.numbers.toJSON(),
      classes: [...classes].map(([value, n]) => ({ value, count: n })),
      otherClasses: this.otherClasses,
      confidence: this.confidence.toJSON(),
    };
  }

  /**
   * Rows by class, as text (1 and "1" are one class): the classes counted, and the numbers by
   * their exact counts. Past EXACT_VALUES distinct numbers, the numbers have no class of their own
   * (in a categorical column, they count as other).
   */
  private classCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    const put = (value: unknown, n: number) => counts.set(String(value), (counts.get(String(value)) ?? 0) + n);
    for (const [value, n] of this.classes) put(value, n);
    for (const [value, n] of this.numbers.values() ?? []) put(value, n);
    return counts;
  }

  merge(state: SegmentProfile['targets'][number]): void {
    this.count += state.count;
    this.nulls += state.nulls;
    if (state.numbers) this.numbers.merge(state.numbers);
    if (state.confidence) this.confidence.merge(state.confidence);
    for (const { value, count: n } of state.classes) this.classes.set(value, (this.classes.get(value) ?? 0) + n);
    this.otherClasses += state.otherClasses;
    if (this.classes.size > CLASSES_MERGED) {
      const kept = new Set(mostFrequent(this.classes, CLASSES_KEPT).map((c) => c.value));
      for (const [value, n] of this.classes) {
        if (kept.has(String(value))) continue;
        this.classes.delete(value);
        this.otherClasses += n;
      }
    }
  }

  summary(): PredictionProfile['targets'][number] {
    const kind = this.interval || this.numbers.count === this.count ? 'numeric' : 'categorical';
    const classes = kind === 'categorical' ? mostFrequent(this.classCounts(), CLASSES_LISTED) : null;
    return {
      target: this.target,
      column: this.column,
      kind,
      count: this.count,
      nulls: this.nulls,
      numeric: kind === 'numeric' ? this.numbers.summary() : null,
      classes,
      otherClasses: classes ? this.count - classes.reduce((n, c) => n + c.count, 0) : 0,
      confidence: this.confidence.summary(),
    };
  }
}

/** The `n` most frequent classes, ties by value (as text), so the order is the same every time. */
function mostFrequent(classes: ReadonlyMap<unknown, number>, n: number): { value: string; count: number }[] {
  return [...classes]
    .map(([value, count]) => ({ value: String(value), count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, n);
}

/**
 * A prediction profile as rows are scored (`add`, once per scored row, and `addInputs` with the
 * values it sent, allocating nothing beyond what the sketches grow), stored per segment (`toJSON`),
 * and merged in segment order (`merge`) into the manifest's profile (`summary`).
 */
export class ProfileAccumulator {
  private readonly targets: TargetProfile[];
  private readonly inputs: TargetProfile[];
  /** False once a segment without an input profile (before 0.4) was merged. */
  private inputsKept = true;

  /** @param inputs the input columns as sent, in order (see inputColumns) */
  constructor(schema: OutputSchema, inputs: readonly string[]) {
    let first = 0;
    this.targets = schema.targets.map((t) => {
      const at = (member: string) => {
        const i = t.columns.findIndex((c) => c.member === member);
        return i < 0 ? -1 : first + i;
      };
      const profile = new TargetProfile(t.target, t.columns[0]?.column ?? t.target, t.interval, at(t.target), at(`${t.target}_confidence`));
      first += t.columns.length;
      return profile;
    });
    this.inputs = inputs.map((column, i) => new TargetProfile(column, column, false, i, -1));
  }

  /** A scored row's prediction values, in schema order (`OutputSchema.columns`). */
  add(predictions: readonly unknown[]): void {
    for (let i = 0; i < this.targets.length; i++) this.targets[i].add(predictions);
  }

  /** A scored row's input values as sent, in the order of the constructor's `inputs` (see RequestEncoder.values). */
  addInputs(values: readonly unknown[]): void {
    for (let i = 0; i < this.inputs.length; i++) this.inputs[i].add(values);
  }

  toJSON(): z.input<typeof segmentProfileSchema> {
    return { relativeAccuracy: RELATIVE_ACCURACY, targets: this.targets.map((t) => t.toJSON()), inputs: this.inputs.map((t) => t.toJSON()) };
  }

  /** Adds segment `index`'s profile; segments are merged in their order, so the result is always the same. */
  merge(segment: SegmentProfile, index: number): void {
    const mismatch = (what: string, stored: readonly { target: string }[], ours: readonly TargetProfile[]) => {
      const names = stored.map((t) => t.target);
      if (names.join('\0') === ours.map((t) => t.target).join('\0')) return;
      throw new RunFolderError(
        `segment ${index}'s done marker profiles the ${what} ${names.join(', ') || '(none)'}, not the run's (${ours.map((t) => t.target).join(', ')}): was it edited? Delete it to score the segment again, then resume the run`,
      );
    };
    mismatch('targets', segment.targets, this.targets);
    segment.targets.forEach((t, i) => this.targets[i].merge(t));
    if (!segment.inputs) this.inputsKept = false;
    else if (this.inputsKept) {
      mismatch('input columns', segment.inputs, this.inputs);
      segment.inputs.forEach((t, i) => this.inputs[i].merge(t));
    }
  }

  summary(): PredictionProfile {
    return {
      relativeAccuracy: RELATIVE_ACCURACY,
      targets: this.targets.map((t) => t.summary()),
      inputs: this.inputsKept
        ? this.inputs.map((t) => {
            const { column, kind, count, nulls, numeric, classes, otherClasses } = t.summary();
            return { column, kind, count, nulls, numeric, classes, otherClasses };
          })
        : null,
    };
  }
}

/**
 * Folds segments' profiles into the run's one as they are read, in segment order, so that a run
 * of thousands of segments never holds all their sketches at once.
 */
export class ProfileMerger {
  private readonly merged: ProfileAccumulator;
  private readonly without: number[] = [];
  private segments = 0;

  /** @param inputs the input columns as sent (see ProfileAccumulator) */
  constructor(schema: OutputSchema, inputs: readonly string[]) {
    this.merged = new ProfileAccumulator(schema, inputs);
  }

  /** Adds segment `index`'s profile (null: scored by a release that kept none); call in segment order. */
  add(profile: SegmentProfile | null, index: number): void {
    this.segments++;
    if (profile === null) this.without.push(index);
    else if (this.without.length === 0) this.merged.merge(profile, index);
  }

  /**
   * The run's profile, or null, with a warning saying why, when a segment was scored by a release
   * that kept none (its done marker has no profile).
   */
  result(): { profile: PredictionProfile | null; warning?: string } {
    const { without } = this;
    if (without.length === 0) return { profile: this.merged.summary() };
    const which = without.length > 5 ? `${without.slice(0, 5).join(', ')} and ${without.length - 5} more` : without.join(', ');
    return {
      profile: null,
      warning: `${without.length} of ${this.segments} segments (${which}) were scored by an earlier release, which kept no prediction profile: the manifest has none; score the input again under a new --run-id to have one`,
    };
  }
}
