import { z } from 'zod';
import { RunFolderError } from '../errors.js';
import type { InputRow } from '../formats/index.js';
import { excerpt } from '../text-excerpt.js';
import { ExactSum } from './exact-sum.js';
import type { OutputSchema } from './output-schema.js';
import { Numbers, numbersStateSchema, numericSummarySchema } from './prediction-profile.js';

/** Rows that differ most kept per target, in a segment and in the run's comparison. */
export const ROWS_SHOWN = 20;

/**
 * The members a comparison reads of the other model's answers, per target of the run's schema:
 * its value, and for a target with an interval its `_min` and `_max`; then the row id member.
 */
export function comparedMembers(schema: OutputSchema, rowIdMember: string | undefined): string[] {
  return [
    ...schema.targets.flatMap((t) => (t.interval ? [t.target, `${t.target}_min`, `${t.target}_max`] : [t.target])),
    ...(rowIdMember ? [rowIdMember] : []),
  ];
}

/** A row the two models answered differently: its number, its input (bounded), and both answers. */
const differingRowSchema = z.object({
  /** 1-based, in the run's input. */
  row: z.int().min(1),
  input: z.string(),
  main: z.unknown(),
  other: z.unknown(),
  /** other − main for numbers; absent for classes. */
  difference: z.number().optional(),
});
type DifferingRow = z.output<typeof differingRowSchema>;

const count = z.int().min(0);

const targetStateSchema = z.object({
  target: z.string(),
  /** Rows both models answered with a value. */
  compared: count,
  /** Of those, rows with the same value. */
  agreed: count,
  difference: numbersStateSchema.nullable(),
  /** The sum of |difference| (ExactSum parts); absent from done markers of releases that kept none. */
  absoluteSum: z.array(z.number()).optional(),
  minShift: numbersStateSchema.nullable(),
  maxShift: numbersStateSchema.nullable(),
  rows: z.array(differingRowSchema).max(ROWS_SHOWN),
});

/** One segment's comparison, kept in its done marker and merged in segment order. */
export const segmentComparisonSchema = z.object({
  /** Rows the other model did not answer (its request failed): not compared. */
  unanswered: count,
  targets: z.array(targetStateSchema),
});
export type SegmentComparison = z.output<typeof segmentComparisonSchema>;

/** The run's comparison of its model with the other one (`comparison.json`; the manifest keeps it without `rows`). */
export const comparisonSchema = z.object({
  /** The model the outputs are of, and the one compared with it (both as resolved when the run was planned). */
  model: z.string(),
  other: z.string(),
  unanswered: count,
  targets: z.array(
    z.object({
      target: z.string(),
      compared: count,
      agreed: count,
      /** agreed / compared: for classes the agreement rate; for numbers the share answered exactly alike. Null with nothing compared. */
      agreement: z.number().nullable(),
      /** Numbers: other − main, row by row. */
      difference: numericSummarySchema.nullable(),
      /**
       * Numbers: the mean of |other − main|; null with no numbers, or when a segment scored by an
       * earlier release kept no sum of it. Absent from comparison.json and manifests of those releases.
       */
      meanAbsDifference: z.number().nullable().optional(),
      /** Targets with an interval: how far each end moved (other − main). */
      minShift: numericSummarySchema.nullable(),
      maxShift: numericSummarySchema.nullable(),
      /** The ROWS_SHOWN rows that differ most (numbers: by |difference|; classes: the first differing ones), ties by row. */
      rows: z.array(differingRowSchema),
    }),
  ),
});
export type Comparison = z.output<typeof comparisonSchema>;

/** The manifest's `comparison`: comparison.json without the rows. */
export const comparisonSummarySchema = comparisonSchema.extend({
  /** The comparison's file in the run folder. */
  file: z.literal('comparison.json'),
  targets: z.array(comparisonSchema.shape.targets.element.omit({ rows: true })),
});
export type ComparisonSummary = z.output<typeof comparisonSummarySchema>;

/** The manifest's summary of a comparison. */
export function comparisonSummary(comparison: Comparison): ComparisonSummary {
  return { ...comparison, file: 'comparison.json', targets: comparison.targets.map(({ rows: _rows, ...t }) => t) };
}

/** One target's comparison as rows come. */
class TargetComparison {
  compared = 0;
  agreed = 0;
  readonly difference = new Numbers();
  /** Σ|difference|, while every segment merged kept it (null once one did not). */
  private absolute: ExactSum | null = new ExactSum();
  readonly minShift = new Numbers();
  readonly maxShift = new Numbers();
  rows: DifferingRow[] = [];

  constructor(
    readonly target: string,
    /** Where the value, and its interval's ends (-1 without), are in a row's predictions (schema order). */
    private readonly at: { value: number; min: number; max: number },
    /** Where they are among the other model's members (see comparedMembers). */
    private readonly otherAt: { value: number; min: number; max: number },
  ) {}

  add(row: InputRow, predictions: readonly unknown[], other: readonly unknown[]): void {
    const [main, theirs] = [predictions[this.at.value], other[this.otherAt.value]];
    if (main === null || main === undefined || theirs === null || theirs === undefined) return;
    this.compared++;
    if (typeof main === 'number' && typeof theirs === 'number') {
      const difference = theirs - main;
      this.difference.add(difference);
      this.absolute?.add(Math.abs(difference));
      this.shift(this.minShift, predictions[this.at.min], other[this.otherAt.min]);
      this.shift(this.maxShift, predictions[this.at.max], other[this.otherAt.max]);
      if (difference === 0) this.agreed++;
      else this.keep({ row: row.index + 1, input: rowText(row), main, other: theirs, difference });
    } else if (classText(main) === classText(theirs)) this.agreed++;
    else this.keep({ row: row.index + 1, input: rowText(row), main, other: theirs });
  }

  private shift(into: Numbers, main: unknown, theirs: unknown): void {
    if (typeof main === 'number' && typeof theirs === 'number') into.add(theirs - main);
  }

  /** Keeps the row if it is among the ROWS_SHOWN that differ most so far. */
  keep(row: DifferingRow): void {
    this.rows.push(row);
    if (this.rows.length > 2 * ROWS_SHOWN) this.rows = mostDiffering(this.rows);
  }

  toJSON(): z.input<typeof targetStateSchema> {
    return {
      target: this.target,
      compared: this.compared,
      agreed: this.agreed,
      difference: this.difference.toJSON(),
      ...(this.absolute && { absoluteSum: this.absolute.parts() }),
      minShift: this.minShift.toJSON(),
      maxShift: this.maxShift.toJSON(),
      rows: mostDiffering(this.rows),
    };
  }

  merge(state: SegmentComparison['targets'][number]): void {
    this.compared += state.compared;
    this.agreed += state.agreed;
    if (state.difference) this.difference.merge(state.difference);
    if (state.absoluteSum === undefined) this.absolute = null;
    else for (const part of state.absoluteSum) this.absolute?.add(part);
    if (state.minShift) this.minShift.merge(state.minShift);
    if (state.maxShift) this.maxShift.merge(state.maxShift);
    for (const row of state.rows) this.keep(row);
  }

  summary(): Comparison['targets'][number] {
    return {
      target: this.target,
      compared: this.compared,
      agreed: this.agreed,
      agreement: this.compared === 0 ? null : this.agreed / this.compared,
      difference: this.difference.summary(),
      meanAbsDifference: this.absolute && this.difference.count > 0 ? this.absolute.value() / this.difference.count : null,
      minShift: this.minShift.summary(),
      maxShift: this.maxShift.summary(),
      rows: mostDiffering(this.rows),
    };
  }
}

/** The ROWS_SHOWN rows that differ most: by |difference| (classes count as differing wholly), ties by row. */
function mostDiffering(rows: readonly DifferingRow[]): DifferingRow[] {
  const size = (r: DifferingRow) => (r.difference === undefined ? Infinity : Math.abs(r.difference));
  return [...rows].sort((a, b) => size(b) - size(a) || a.row - b.row).slice(0, ROWS_SHOWN);
}

/** A class as text: a string as it is, anything else as its JSON (so 1 and "1" are one class, as the profile counts them). */
function classText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A row's input as the comparison shows it: its text as read, or its values as JSON, bounded. */
function rowText(row: InputRow): string {
  return excerpt(row.text ?? JSON.stringify(row.record ?? null));
}

/**
 * Shadow scoring's comparison as rows are scored (`add`, with the other model's answer or null
 * where its request failed), stored per segment (`toJSON`), merged in segment order (`merge`),
 * and summarized for the run (`summary`).
 */
export class ComparisonAccumulator {
  private readonly targets: TargetComparison[];
  private unanswered = 0;

  constructor(schema: OutputSchema) {
    let first = 0;
    let other = 0;
    this.targets = schema.targets.map((t) => {
      const at = (member: string) => {
        const i = t.columns.findIndex((c) => c.member === member);
        return i < 0 ? -1 : first + i;
      };
      const mine = { value: at(t.target), min: at(`${t.target}_min`), max: at(`${t.target}_max`) };
      const theirs = t.interval ? { value: other, min: other + 1, max: other + 2 } : { value: other, min: -1, max: -1 };
      first += t.columns.length;
      other += t.interval ? 3 : 1;
      return new TargetComparison(t.target, mine, theirs);
    });
  }

  /** A scored row: its predictions (schema order) and the other model's members (comparedMembers order), or null when it did not answer. */
  add(row: InputRow, predictions: readonly unknown[], other: readonly unknown[] | null): void {
    if (other === null) this.unanswered++;
    else for (const t of this.targets) t.add(row, predictions, other);
  }

  toJSON(): z.input<typeof segmentComparisonSchema> {
    return { unanswered: this.unanswered, targets: this.targets.map((t) => t.toJSON()) };
  }

  /** Adds segment `index`'s comparison; segments are merged in their order, so the result is always the same. */
  merge(segment: SegmentComparison, index: number): void {
    const names = segment.targets.map((t) => t.target);
    if (names.join('\0') !== this.targets.map((t) => t.target).join('\0')) {
      throw new RunFolderError(
        `segment ${index}'s done marker compares the targets ${names.join(', ') || '(none)'}, not the run's (${this.targets.map((t) => t.target).join(', ')}): was it edited? Delete it to score the segment again, then resume the run`,
      );
    }
    this.unanswered += segment.unanswered;
    segment.targets.forEach((t, i) => this.targets[i].merge(t));
  }

  summary(model: string, other: string): Comparison {
    return { model, other, unanswered: this.unanswered, targets: this.targets.map((t) => t.summary()) };
  }
}
