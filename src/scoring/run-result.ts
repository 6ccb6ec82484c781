import { z } from 'zod';
import { excerpt } from '../text-excerpt.js';
import type { Manifest } from './manifest.js';
import { endingStateSchema } from './run-lifecycle.js';
import { capReachedSchema } from './run-caps.js';

/** Bytes of an error message a result carries: a chat line, not a log (the manifest keeps it whole). */
export const RESULT_MESSAGE_BYTES = 500;
/** Bytes of a column or model name a result carries. */
const NAME_BYTES = 128;

const bounded = (maxBytes: number) => z.string().refine((text) => Buffer.byteLength(text) <= maxBytes, { message: `must be at most ${maxBytes} bytes` });

/** Who judged a held run, when and why (see judgeRun). */
const judgementSchema = z.object({ by: bounded(NAME_BYTES * 2), at: z.iso.datetime(), why: bounded(RESULT_MESSAGE_BYTES).nullable() }).strict();

/**
 * How an attempt of a run ended, in the facts every view tells of it (the CLI's summary,
 * `status`, the run API and pages, webhooks): computed once from the run's manifest by runResult,
 * kept beside the queue's job, never derived again by a view. Every text is bounded, so a result
 * read back from Redis is safe to show.
 */
export const runResultSchema = z
  .object({
    state: endingStateSchema,
    /** Which attempt of the run (1 for its first start, one more for each resume; 0: it ended before it began one). */
    attempt: z.int().min(0),
    finishedAt: z.iso.datetime(),
    error: z
      .object({ code: z.string().regex(/^E_[A-Z_]{1,40}$/), message: bounded(RESULT_MESSAGE_BYTES) })
      .strict()
      .nullable(),
    counts: z
      .object({ rowsIn: z.int().min(0), rowsScored: z.int().min(0), rowsQuarantined: z.int().min(0) })
      .strict()
      .nullable(),
    /** Rows read per second of the attempt's duration (see rowsPerSecond); null without counts. */
    rowsPerSecond: z.int().min(0).nullable(),
    /** The drift verdict: its level, and the column that moved most (its PSI) from which baseline run. */
    drift: z
      .object({ level: z.enum(['ok', 'warn', 'fail']), column: bounded(NAME_BYTES).nullable(), psi: z.number().nullable(), baseline: bounded(NAME_BYTES) })
      .strict()
      .nullable(),
    /** Shadow scoring (--compare-model): the model compared with, and the lowest agreement of its targets (null with nothing compared). */
    shadow: z
      .object({ other: bounded(NAME_BYTES), agreement: z.number().nullable() })
      .strict()
      .nullable(),
    /** The cap an expired run reached, and the rows its segments keep of the input's (what a resume goes on after). */
    cap: capReachedSchema
      .pick({ kind: true, limit: true })
      .extend({ rowsKept: z.int().min(0), rowsTotal: z.int().min(0) })
      .strict()
      .nullable(),
    /** Who accepted a held run, when and why. */
    accepted: judgementSchema.nullable(),
    /** Who rejected a held run, when and why: it failed for good, and is not resumed. */
    rejected: judgementSchema.nullable().default(null),
  })
  .strict();
export type RunResult = z.output<typeof runResultSchema>;

/** The result of the attempt a manifest records. */
export function runResult(manifest: Manifest): RunResult {
  const c = manifest.counts;
  return runResultSchema.parse({
    state: manifest.state,
    attempt: manifest.attempt ?? 1,
    finishedAt: manifest.finishedAt,
    error: manifest.error ? { code: manifest.error.code, message: excerpt(manifest.error.message, RESULT_MESSAGE_BYTES) } : null,
    counts: c ? { rowsIn: c.rowsIn, rowsScored: c.rowsScored, rowsQuarantined: c.rowsQuarantined } : null,
    rowsPerSecond: rowsPerSecond(manifest),
    drift: driftVerdict(manifest.drift),
    shadow: shadowAgreement(manifest.comparison),
    cap: manifest.cap
      ? { kind: manifest.cap.kind, limit: manifest.cap.limit, rowsKept: manifest.cap.reached.rowsScored, rowsTotal: manifest.cap.reached.rowsTotal }
      : null,
    accepted: judgement(manifest.accepted),
    rejected: judgement(manifest.rejected),
  });
}

/**
 * A finished run's rate, as every view shows it: the rows it read (scored and quarantined) per
 * second of its attempt's duration, whole; null without counts or duration.
 */
export function rowsPerSecond(manifest: Pick<Manifest, 'counts' | 'durationMs'>): number | null {
  return manifest.counts && manifest.durationMs > 0 ? Math.round((manifest.counts.rowsIn * 1000) / manifest.durationMs) : null;
}

/** A judgement of the manifest, its texts cut to their bounds. */
function judgement(record: Manifest['accepted']): z.input<typeof judgementSchema> | null {
  if (!record) return null;
  return { by: excerpt(record.by, NAME_BYTES * 2), at: record.at, why: record.why ? excerpt(record.why, RESULT_MESSAGE_BYTES) : null };
}

function driftVerdict(drift: Manifest['drift']): RunResult['drift'] {
  if (!drift) return null;
  const worst = drift.columns.reduce<(typeof drift.columns)[number] | undefined>((w, c) => (w === undefined || c.psi > w.psi ? c : w), undefined);
  return {
    level: drift.level,
    column: worst ? excerpt(worst.column, NAME_BYTES) : null,
    psi: worst?.psi ?? null,
    baseline: excerpt(drift.baseline.runId, NAME_BYTES),
  };
}

function shadowAgreement(comparison: Manifest['comparison']): RunResult['shadow'] {
  if (!comparison) return null;
  const rates = comparison.targets.flatMap((t) => (t.agreement === null ? [] : [t.agreement]));
  return { other: excerpt(comparison.other, NAME_BYTES), agreement: rates.length > 0 ? Math.min(...rates) : null };
}

/**
 * The result in words, as the CLI's summary, `status`, the runs list and webhooks say it:
 * `held: 10000 rows scored, 2 quarantined; drift fail (price PSI 0.412 from run r-1); ...`.
 */
export function describeResult(r: RunResult): string {
  const parts = [
    r.counts && `${r.counts.rowsScored} rows scored, ${r.counts.rowsQuarantined} quarantined`,
    // A failed or held run's code; a cancelled or expired run's state says it (and its cap, which).
    r.error && (r.state === 'failed' || r.state === 'held') && `[${r.error.code}]`,
    capNote(r),
    ...resultNotes(r),
  ].filter((p): p is string => typeof p === 'string' && p !== '');
  return `${r.state}${parts.length > 0 ? `: ${parts.join('; ')}` : ''}`;
}

/** The cap an expired run reached and the rows it keeps, in words; undefined for a run stopped by none. */
export function capNote(r: RunResult): string | undefined {
  return r.cap ? `cap ${r.cap.kind} ${r.cap.limit} reached, ${r.cap.rowsKept} of ${r.cap.rowsTotal} rows kept` : undefined;
}

/** What a result says beyond its counts, code and cap: the drift verdict, shadow agreement, who accepted or rejected it. */
export function resultNotes(r: RunResult): string[] {
  return [
    r.drift && `drift ${r.drift.level}${r.drift.column === null ? '' : ` (${r.drift.column} PSI ${r.drift.psi!.toFixed(3)} from run ${r.drift.baseline})`}`,
    r.shadow && `shadow agreement ${r.shadow.agreement === null ? '-' : `${(r.shadow.agreement * 100).toFixed(1)}%`} with ${r.shadow.other}`,
    judgementNote('accepted', r.accepted),
    judgementNote('rejected', r.rejected),
  ].filter((p): p is string => typeof p === 'string' && p !== '');
}

function judgementNote(verdict: 'accepted' | 'rejected', j: RunResult['accepted']): string | undefined {
  return j ? `${verdict} by ${j.by} at ${j.at}${j.why ? `: ${excerpt(j.why, 120)}` : ''}` : undefined;
}

/**
 * A run's rows per second as every view shows it: a settled run's from its record (see
 * rowsPerSecond), a live run's from its progress; undefined without either.
 */
export function shownRate(r: { result?: Pick<RunResult, 'rowsPerSecond'>; progress?: { rowsPerSecond: number } }): number | undefined {
  return r.result?.rowsPerSecond ?? r.progress?.rowsPerSecond;
}
