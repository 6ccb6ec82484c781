import { z } from 'zod';
import { GridHistogram } from './grid-histogram.js';
import type { NumericSummary, PredictionProfile } from './prediction-profile.js';

/** Bins a numeric column is compared over: the baseline's deciles, as near as its grid's cells allow. */
export const DRIFT_BINS = 10;
/** The smallest share a bin counts with in PSI: an empty bin would make it infinite. */
const SHARE_FLOOR = 1e-4;
/** Classes listed per categorical column, the largest change in share first. */
const CLASSES_SHOWN = 20;
/** The bin of rows without a value. */
const NULLS = '(null)';
/** The bin of a categorical column's rows whose class neither run lists. */
const OTHER = '(other)';

const level = z.enum(['ok', 'warn', 'fail']);
export type DriftLevel = z.output<typeof level>;

/** One bin of a comparison: a range of numbers [lo, hi) or a class (or null, or other), and each run's rows in it. */
const driftBinSchema = z.object({
  label: z.string().optional(),
  lo: z.number().optional(),
  hi: z.number().optional(),
  baseline: z.int().min(0),
  current: z.int().min(0),
});
export type DriftBin = z.output<typeof driftBinSchema>;

/** How far one column's values moved from the baseline run's. */
const columnDriftSchema = z.object({
  /** A target's predictions, its confidences, or an input column as sent. */
  of: z.enum(['prediction', 'confidence', 'input']),
  /** The output column (predictions, confidences) or the input column. */
  column: z.string(),
  /**
   * Population stability index over `bins`: the sum of (current − baseline) · ln(current /
   * baseline) over the bins' shares, each at least 1e-4. Below 0.1 is usually read as no change,
   * above 0.25 as a large one.
   */
  psi: z.number(),
  /** Jensen–Shannon distance over `bins` (base 2): 0 for the same shares, 1 for disjoint ones. */
  jsDistance: z.number(),
  level,
  /**
   * Numbers: the baseline's deciles (cut at its grid's cells, so no value is split; the first and
   * last open-ended), then rows without a value. Classes: each class either run lists, the rest,
   * and rows without a value, the largest change in share first (CLASSES_SHOWN at most are kept
   * here; PSI and the distance count them all).
   */
  bins: z.array(driftBinSchema),
});
export type ColumnDrift = z.output<typeof columnDriftSchema>;

/** What a run's PSI is held to: above `warn` the run is flagged, above `fail` it fails (E_DRIFT); null: never. */
export const driftThresholdsSchema = z.object({ warn: z.number().min(0).nullable(), fail: z.number().min(0).nullable() });
export type DriftThresholds = z.output<typeof driftThresholdsSchema>;

/** The manifest's `drift`: the run's profile against a baseline run's, column by column. */
export const driftSchema = z.object({
  baseline: z.object({
    runId: z.string(),
    finishedAt: z.string(),
    /** `previous`: the pipeline's latest run that succeeded before this one; `named`: the run its options name. */
    chosen: z.enum(['previous', 'named']),
  }),
  thresholds: driftThresholdsSchema,
  /** The highest of the columns' levels. */
  level,
  /** The columns at warn or fail, the largest PSI first. */
  moved: z.array(z.string()),
  columns: z.array(columnDriftSchema),
  /** Columns not compared, and why (another kind of values in one run, or a profile from before 0.4). */
  skipped: z.array(z.object({ column: z.string(), why: z.string() })),
});
export type Drift = z.output<typeof driftSchema>;

/** The baseline run a drift is computed against: its id, end, and profile. */
export interface Baseline {
  runId: string;
  finishedAt: string;
  chosen: Drift['baseline']['chosen'];
  profile: PredictionProfile;
}

/**
 * The drift of a run's profile from a baseline's: every target's predictions and confidences and
 * every input column both profiles hold, by name.
 */
export function computeDrift(current: PredictionProfile, baseline: Baseline, thresholds: DriftThresholds): Drift {
  const columns: ColumnDrift[] = [];
  const skipped: Drift['skipped'] = [];
  const compare = (of: ColumnDrift['of'], column: string, bins: DriftBin[] | string) => {
    if (typeof bins === 'string') return skipped.push({ column, why: bins });
    if (!bins.some((b) => b.baseline > 0) || !bins.some((b) => b.current > 0)) return skipped.push({ column, why: 'no rows in one of the runs' });
    const { psi, jsDistance } = measures(bins);
    columns.push({ of, column, psi, jsDistance, level: levelOf(psi, thresholds), bins: shown(bins) });
  };
  const before = baseline.profile;
  for (const t of current.targets) {
    const b = before.targets.find((x) => x.target === t.target);
    if (!b) continue;
    compare('prediction', t.column, valueBins(b, t));
    if (t.confidence && b.confidence) compare('confidence', `${t.column}_confidence`, numericBins(b.confidence, t.confidence) ?? 'no grid of its values');
  }
  for (const i of current.inputs ?? []) {
    const b = before.inputs?.find((x) => x.column === i.column);
    if (b) compare('input', i.column, valueBins(b, i));
  }
  const rank: Record<DriftLevel, number> = { ok: 0, warn: 1, fail: 2 };
  const moved = columns.filter((c) => c.level !== 'ok').sort((x, y) => y.psi - x.psi);
  return {
    baseline: { runId: baseline.runId, finishedAt: baseline.finishedAt, chosen: baseline.chosen },
    thresholds,
    level: columns.reduce<DriftLevel>((worst, c) => (rank[c.level] > rank[worst] ? c.level : worst), 'ok'),
    moved: moved.map((c) => c.column),
    columns,
    skipped,
  };
}

/** What a target's or an input column's values have in common, in both profiles. */
interface Values {
  kind: 'numeric' | 'categorical';
  count: number;
  nulls: number;
  numeric: NumericSummary | null;
  classes: { value: string; count: number }[] | null;
  otherClasses: number;
}

/** The bins of a column's values and nulls, or why it cannot be compared. */
function valueBins(baseline: Values, current: Values): DriftBin[] | string {
  if (baseline.kind !== current.kind) return `${baseline.kind} in the baseline, ${current.kind} now`;
  const nulls: DriftBin = { label: NULLS, baseline: baseline.nulls, current: current.nulls };
  if (current.kind === 'categorical') return [...classBins(baseline, current), nulls];
  if (!baseline.numeric || !current.numeric) {
    // No number in one of them: only the nulls and the count of numbers compare.
    return [{ label: 'numbers', baseline: baseline.count, current: current.count }, nulls];
  }
  const bins = numericBins(baseline.numeric, current.numeric);
  return bins ? [...bins, nulls] : 'no grid of its values (a profile from before 0.4)';
}

/**
 * Both runs' numbers in DRIFT_BINS bins of about equal baseline rows, made of whole cells of the
 * two grids at their common scale; the first starts at -∞ and the last ends at +∞, so every number
 * of either run is in one. Null when either summary has no grid.
 */
function numericBins(baseline: NumericSummary, current: NumericSummary): DriftBin[] | null {
  const [a, b] = [baseline.distribution?.grid, current.distribution?.grid];
  if (!a || !b) return null;
  const cells = GridHistogram.common(GridHistogram.of(a.scale, a.first, a.counts), GridHistogram.of(b.scale, b.first, b.counts));
  const total = cells.reduce((n, c) => n + c.a, 0);
  const bins: DriftBin[] = [];
  let open: DriftBin | undefined;
  let seen = 0;
  for (const cell of cells) {
    open ??= { lo: cell.lo, hi: cell.hi, baseline: 0, current: 0 };
    open.hi = cell.hi;
    open.baseline += cell.a;
    open.current += cell.b;
    seen += cell.a;
    // Closed once it reaches its share of the baseline's rows, unless the rest holds none of them.
    if (seen >= ((bins.length + 1) * total) / DRIFT_BINS && seen < total) {
      bins.push(open);
      open = undefined;
    }
  }
  if (open) bins.push(open);
  bins[0].lo = -Infinity;
  bins[bins.length - 1].hi = Infinity;
  // JSON has no infinity: the open ends are left without a bound.
  return bins.map((bin) => ({
    ...(Number.isFinite(bin.lo) && { lo: bin.lo }),
    ...(Number.isFinite(bin.hi) && { hi: bin.hi }),
    baseline: bin.baseline,
    current: bin.current,
  }));
}

/** Each class either run lists, with its rows in each (0 where a run does not list it), and the rest as other. */
function classBins(baseline: Values, current: Values): DriftBin[] {
  const listed = new Map<string, DriftBin>();
  for (const [run, values] of [
    ['baseline', baseline],
    ['current', current],
  ] as const) {
    for (const { value, count } of values.classes ?? []) {
      const bin = listed.get(value) ?? { label: value, baseline: 0, current: 0 };
      bin[run] = count;
      listed.set(value, bin);
    }
  }
  const bins = [...listed.values()];
  const rest = (run: 'baseline' | 'current', values: Values) => values.count - bins.reduce((n, b) => n + b[run], 0);
  return [...bins, { label: OTHER, baseline: rest('baseline', baseline), current: rest('current', current) }];
}

/** PSI and Jensen–Shannon distance of two runs' shares over the same bins (each run with rows in some bin). */
function measures(bins: readonly DriftBin[]): { psi: number; jsDistance: number } {
  const totalA = bins.reduce((n, b) => n + b.baseline, 0);
  const totalB = bins.reduce((n, b) => n + b.current, 0);
  let psi = 0;
  let js = 0;
  for (const bin of bins) {
    const [p, q] = [bin.baseline / totalA, bin.current / totalB];
    const [pf, qf] = [Math.max(p, SHARE_FLOOR), Math.max(q, SHARE_FLOOR)];
    psi += (qf - pf) * Math.log(qf / pf);
    const m = (p + q) / 2;
    if (p > 0) js += (p / 2) * Math.log2(p / m);
    if (q > 0) js += (q / 2) * Math.log2(q / m);
  }
  // Rounding can leave the divergence a hair below 0 for equal shares.
  return { psi, jsDistance: Math.sqrt(Math.min(1, Math.max(0, js))) };
}

function levelOf(psi: number, thresholds: DriftThresholds): DriftLevel {
  if (thresholds.fail !== null && psi > thresholds.fail) return 'fail';
  if (thresholds.warn !== null && psi > thresholds.warn) return 'warn';
  return 'ok';
}

/** The bins a column keeps in the manifest: all of a numeric one's; a categorical one's largest changes in share. */
function shown(bins: DriftBin[]): DriftBin[] {
  if (bins.length <= CLASSES_SHOWN || bins.some((b) => b.lo !== undefined || b.hi !== undefined)) return bins;
  const totalA = Math.max(
    1,
    bins.reduce((n, b) => n + b.baseline, 0),
  );
  const totalB = Math.max(
    1,
    bins.reduce((n, b) => n + b.current, 0),
  );
  const change = (b: DriftBin) => Math.abs(b.current / totalB - b.baseline / totalA);
  return [...bins].sort((x, y) => change(y) - change(x)).slice(0, CLASSES_SHOWN);
}
