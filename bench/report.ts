/**
 * What a section reports: figures, each with its target and verdict, printed one a line as they
 * are taken and kept for results.json and BENCHMARKS.md.
 */
import type { BenchContext } from './context.js';

/** PASS or MISS against a target; '' for a figure without one (or without a value). */
export type Verdict = 'PASS' | 'MISS' | '';

export interface Target {
  atLeast?: number;
  atMost?: number;
}

export interface Figure {
  name: string;
  /** null: the run folder did not have it (n/a). */
  value: number | string | null;
  unit: string;
  target: string;
  verdict: Verdict;
  /** The Node.js that ran the processes measured: every command of the suite runs on the bench's own (process.execPath). */
  runtime: string;
}

/** A section of the suite: one idea measured, with its own runs. */
export interface Section {
  id: string;
  title: string;
  /** Only with --full (long, or needing more than this machine's usual set-up). */
  fullOnly?: boolean;
  /** Only when BENCH_SECTIONS names it: a one-off measurement that chose something, not a figure to watch. */
  onlyWhenNamed?: boolean;
  run(ctx: BenchContext, report: SectionReport): Promise<void>;
}

export class SectionReport {
  readonly figures: Figure[] = [];
  readonly notes: string[] = [];
  /** Every measured run of the section, as taken: results.json's raw figures. */
  readonly raw: Record<string, unknown>[] = [];
  error?: string;

  constructor(
    readonly id: string,
    readonly title: string,
  ) {}

  /** Records a figure and prints it on one line, with its target and PASS/MISS when it has one. */
  figure(name: string, value: number | string | null | undefined, unit = '', target?: Target): void {
    const v = value ?? null;
    const targetText = target ? describeTarget(target, unit) : '';
    const verdict: Verdict = !target || typeof v !== 'number' ? '' : meets(v, target) ? 'PASS' : 'MISS';
    this.figures.push({ name, value: v, unit, target: targetText, verdict, runtime: `Node ${process.versions.node}` });
    const tail = targetText ? ` (target ${targetText}: ${verdict || 'n/a'})` : '';
    console.log(`[${this.id}] ${name}: ${formatValue(v, unit)}${tail}`);
  }

  /** A sentence printed and kept under the section's table (what was skipped, and why). */
  note(text: string): void {
    this.notes.push(text);
    console.log(`[${this.id}] ${text}`);
  }
}

function meets(value: number, t: Target): boolean {
  return (t.atLeast === undefined || value >= t.atLeast) && (t.atMost === undefined || value <= t.atMost);
}

function describeTarget(t: Target, unit: string): string {
  const parts = [];
  if (t.atLeast !== undefined) parts.push(`≥ ${formatValue(t.atLeast, unit)}`);
  if (t.atMost !== undefined) parts.push(`≤ ${formatValue(t.atMost, unit)}`);
  return parts.join(' and ');
}

/** A value as it is printed: n/a for null, fewer decimals for larger numbers, then its unit. */
export function formatValue(value: number | string | null, unit = ''): string {
  if (value === null) return 'n/a';
  if (typeof value === 'string') return unit ? `${value} ${unit}` : value;
  const digits = unit === 'x' ? 2 : Math.abs(value) >= 1000 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  const text = value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: unit === 'x' ? 2 : 0 });
  if (unit === 'x' || unit === '%') return `${text}${unit}`;
  return unit ? `${text} ${unit}` : text;
}
