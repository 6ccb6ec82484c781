import { z } from 'zod';
import type { RunOptions } from '../config/index.js';
import { BatchScorerError } from '../errors.js';
import type { Location, Storage } from '../storage/index.js';
import type { Predictor, RowsPredictOptions } from './predictor.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { readRunFile, writeRunFile } from './run-file.js';
import { keptSoFar } from './segment-prefix.js';

/** The caps a run may reach, as the manifest names them. */
export type CapKind = 'max-requests' | 'max-rows' | 'deadline';

/** The limits of a run's caps: --max-requests, --max-rows, and --deadline as a time in ms. */
export interface CapLimits {
  maxRequests?: number;
  maxRows?: number;
  deadlineMs?: number;
}

/** What a run has used of its caps, all its attempts and resumes together. */
export const capUsageSchema = z.object({ requests: z.int().min(0), rows: z.int().min(0) });
export type CapUsage = z.output<typeof capUsageSchema>;

/**
 * The manifest's `cap` of an expired run: the cap it reached (its limit: a count, or the deadline
 * as an ISO time) and how far the run got: predict calls and rows sent, all its attempts and
 * resumes together, the rows scored and kept for a resume (in its finished segments and the
 * prefixes of the others, see segment-prefix.ts), and its finished segments.
 */
export const capReachedSchema = z.object({
  kind: z.enum(['max-requests', 'max-rows', 'deadline']),
  limit: z.union([z.int(), z.string()]),
  reached: z.object({
    requests: z.int().min(0),
    rowsSent: z.int().min(0),
    rowsScored: z.int().min(0),
    rowsTotal: z.int().min(0),
    segmentsDone: z.int().min(0),
    segmentsTotal: z.int().min(0),
  }),
});
export type CapReached = z.output<typeof capReachedSchema>;

/**
 * A run's caps (--max-requests, --max-rows, --deadline), one for the whole run whoever scores its
 * segments: each predict attempt (planning's probe, each batch, each half of a split batch and
 * each retry, to the run's model or the one it is compared with) is taken from it with its rows
 * before it is sent, so that what the caps count is what the service was sent. Once a cap is
 * reached, every take is refused with ExpiredError and nothing more is sent: requests in flight
 * finish, the segments they belong to stop keeping the rows they scored (see segment-prefix.ts),
 * and the run ends `expired`. Direct mode keeps it in memory (MemoryRunCaps); queue mode on Redis,
 * shared by every worker, taken atomically.
 */
export interface RunCaps {
  /**
   * Takes one predict attempt of `rows` rows, both or neither: refused (ExpiredError) where it
   * would go past --max-requests or --max-rows, past the deadline, or once the run expired.
   */
  takeAttempt(rows: number): Promise<void>;
  /** The cap that refused a take, once one did (as this process knows it). */
  readonly expired: CapKind | undefined;
}

/** A take refused by a cap (E_EXPIRED): the run stops sending. `cap` is set on the run's own error (see runExpired). */
export class ExpiredError extends BatchScorerError {
  constructor(
    readonly kind: CapKind,
    message = `${CAP_FLAGS[kind]} ${kind === 'deadline' ? 'passed' : 'reached'}: no more predict calls are sent`,
    readonly cap?: CapReached,
  ) {
    super('E_EXPIRED', message);
  }
}

/** The flag each cap is set by. */
export const CAP_FLAGS: Record<CapKind, string> = { 'max-requests': '--max-requests', 'max-rows': '--max-rows', deadline: '--deadline' };

/** The limits a run's options set; empty for a run without caps. */
export function capLimits(options: Pick<RunOptions, 'maxRequests' | 'maxRows' | 'deadline'>): CapLimits {
  return {
    ...(options.maxRequests !== undefined && { maxRequests: options.maxRequests }),
    ...(options.maxRows !== undefined && { maxRows: options.maxRows }),
    ...(options.deadline !== undefined && { deadlineMs: Date.parse(options.deadline) }),
  };
}

/** Whether the run has any cap. */
export function capped(limits: CapLimits): boolean {
  return limits.maxRequests !== undefined || limits.maxRows !== undefined || limits.deadlineMs !== undefined;
}

/** The limit of a cap, as the manifest shows it: its count, or the deadline's ISO time. */
export function capLimit(kind: CapKind, options: { maxRequests?: number; maxRows?: number; deadline?: string }): number | string {
  return kind === 'max-requests' ? (options.maxRequests ?? 0) : kind === 'max-rows' ? (options.maxRows ?? 0) : (options.deadline ?? '');
}

/**
 * The run's own error once it has stopped on a cap: it names the flag, how far the run got and
 * how to go on, and carries the manifest's `cap`.
 */
export function runExpired(runId: string, cap: CapReached): ExpiredError {
  const { kind, limit, reached: r } = cap;
  const n = (x: number) => x.toLocaleString('en-US');
  const after = kind === 'max-rows' ? `after ${n(r.rowsSent)} rows sent` : `after ${n(r.requests)} predict call${r.requests === 1 ? '' : 's'}`;
  const what = kind === 'deadline' ? `--deadline ${limit} passed` : `${CAP_FLAGS[kind]} ${limit} reached`;
  const higher = kind === 'deadline' ? 'a later --deadline' : `a higher ${CAP_FLAGS[kind]}`;
  return new ExpiredError(
    kind,
    `run ${runId} expired: ${what} ${after}; ${n(r.rowsScored)} of ${n(r.rowsTotal)} rows scored and kept, ${r.segmentsDone} of ${r.segmentsTotal} segments finished; resume it with ${higher} (or none)`,
    cap,
  );
}

/**
 * The error of a run stopped on `kind`: its cap as `options` set it, what the run sent (`usage`,
 * every attempt together) and what it keeps, read from `storage` (the segments finished, and the
 * rows scored in them and in the others' prefixes, see keptSoFar), of the plan's rows and segments
 * (none when it stopped before planning).
 */
export async function expiredRun(
  storage: Storage,
  runId: string,
  kind: CapKind,
  options: Parameters<typeof capLimit>[1],
  usage: CapUsage,
  run: PreparedRun | undefined,
): Promise<ExpiredError> {
  const kept = run ? await keptSoFar(storage, run) : { segments: 0, rows: 0 };
  return runExpired(runId, {
    kind,
    limit: capLimit(kind, options),
    reached: {
      requests: usage.requests,
      rowsSent: usage.rows,
      rowsScored: kept.rows,
      rowsTotal: run?.input.rows ?? 0,
      segmentsDone: kept.segments,
      segmentsTotal: run?.input.segments.length ?? 0,
    },
  });
}

/** The caps of a run scored in one process (`score`), counted from what its earlier attempts used. */
export class MemoryRunCaps implements RunCaps {
  private used: CapUsage;
  private reached: CapKind | undefined;

  constructor(
    private readonly limits: CapLimits,
    before: CapUsage = { requests: 0, rows: 0 },
    private readonly now: () => number = Date.now,
  ) {
    this.used = { ...before };
  }

  get expired(): CapKind | undefined {
    return this.reached;
  }

  /** What the run has used, its earlier attempts included. */
  get usage(): CapUsage {
    return { ...this.used };
  }

  takeAttempt(rows: number): Promise<void> {
    const refused = this.refusal(passed(this.limits, this.used, rows));
    if (refused) return Promise.reject(refused);
    this.used.requests++;
    this.used.rows += rows;
    return Promise.resolve();
  }

  /** The refusal of a take once the run has expired, or now expires on `kind` or its deadline. */
  private refusal(kind: CapKind | undefined): ExpiredError | undefined {
    const { deadlineMs } = this.limits;
    this.reached ??= kind ?? (deadlineMs !== undefined && this.now() >= deadlineMs ? 'deadline' : undefined);
    return this.reached && new ExpiredError(this.reached);
  }
}

/** The count cap an attempt of `rows` rows would go past, after what the run has `used`; undefined within both. */
function passed(limits: CapLimits, used: CapUsage, rows: number): 'max-requests' | 'max-rows' | undefined {
  if (limits.maxRequests !== undefined && used.requests + 1 > limits.maxRequests) return 'max-requests';
  if (limits.maxRows !== undefined && used.rows + rows > limits.maxRows) return 'max-rows';
  return undefined;
}

/**
 * `client`, each of whose predict attempts is first taken from `caps` with its rows (see
 * CallOptions `beforeAttempt`): planning's probe, each batch, and each retry.
 */
export function cappedPredictor(client: Predictor, caps: RunCaps): Predictor {
  const gated = <O extends Pick<RowsPredictOptions, 'rows' | 'beforeAttempt'>>(options: O): O => ({
    ...options,
    beforeAttempt: async () => {
      await options.beforeAttempt?.();
      await caps.takeAttempt(options.rows);
    },
  });
  return {
    get displayUrl() {
      return client.displayUrl;
    },
    describe: (ref, body, options) => client.describe(ref, body, options),
    predict: (ref, rows, options) => client.predict(ref, rows, gated(options)),
    predictMembers: (ref, rows, members, options) => client.predictMembers(ref, rows, members, gated(options)),
    takeConnectionsOpened: () => client.takeConnectionsOpened(),
  };
}

/** What the earlier attempts of a run scored by `score` used of its caps; nothing for a new run. */
export async function readCapUsage(storage: Storage, folder: Location, signal?: AbortSignal): Promise<CapUsage> {
  return (await readRunFile(storage, runFiles.caps(folder), capUsageSchema, signal)) ?? { requests: 0, rows: 0 };
}

/** Records what a run scored by `score` has used of its caps, for its resume to count on from. */
export async function writeCapUsage(storage: Storage, folder: Location, usage: CapUsage): Promise<void> {
  await writeRunFile(storage, runFiles.caps(folder), usage);
}
