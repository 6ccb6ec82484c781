import { BatchScorerError } from '../errors.js';
import type { PreparedRun } from './prepared-run.js';

/**
 * A run's allowance of quarantined rows (--max-error-rate), one for the whole run whoever scores
 * its segments: each segment reports how many rows it has quarantined so far, and learns whether
 * the run, all segments together, has gone past the allowance; then it stops. Direct mode keeps
 * it in memory (MemoryErrorAllowance); queue mode on Redis, shared by the segments on every worker.
 * Counts are kept per segment and replaced, not added: a segment attempt tried again after a
 * failure starts its count over instead of counting its rows twice.
 */
export interface ErrorAllowance {
  /** The quarantined rows the run may have: `quarantineAllowance` of its rows. */
  readonly allowed: number;
  /**
   * Segment `index` has quarantined `rows` rows so far (this attempt's). Answers true once the
   * run is known to have been past its allowance: the segment must stop, since the run fails.
   * Never waits: an allowance kept elsewhere answers what it learnt by the last call, and learns
   * of this one a round trip later.
   */
  report(index: number, rows: number): boolean;
}

/** The largest share of rows that may be quarantined, as a row count. */
export function quarantineAllowance(rows: number, maxErrorRate: number): number {
  return Math.floor(rows * maxErrorRate);
}

/**
 * A dry run's warning when the share of its canary's rows quarantined (malformed, or refused by
 * the model), taken over the whole input's `rows`, is past the run's allowance: the run would
 * fail E_ERROR_RATE. Exact when the canary covered every row; an extrapolation otherwise.
 */
export function quarantineRisk(canary: { rows: number; quarantined: number }, rows: number, maxErrorRate: number): string | undefined {
  const { quarantined } = canary;
  if (quarantined === 0 || (quarantined * rows) / canary.rows <= quarantineAllowance(rows, maxErrorRate)) return undefined;
  const percent = Number(((quarantined / canary.rows) * 100).toPrecision(2));
  const outcome = canary.rows >= rows ? 'the run would fail with E_ERROR_RATE' : 'at that share the run would fail with E_ERROR_RATE';
  return `${quarantined} of ${canary.rows} canary rows quarantined (${percent}%): past --max-error-rate ${maxErrorRate} (${quarantineAllowance(rows, maxErrorRate)} of ${rows} rows allowed); ${outcome}`;
}

/**
 * Why a run over its allowance fails. Its counts, where given, are those that agree with
 * errors.jsonl, taken once every segment has stopped (see keepQuarantinedRows): the segments still
 * stopping quarantine rows after the one that went past. Without them (the moment the run is
 * found past it) it names the allowance alone; the run's manifest holds the message with them.
 */
export function errorRateExceeded(run: PreparedRun, counts?: { rowsIn: number; rowsQuarantined: number }): BatchScorerError {
  const { maxErrorRate } = run.request.options;
  const allowed = quarantineAllowance(run.input.rows, maxErrorRate);
  const seen = counts ? `${counts.rowsQuarantined} of the ${counts.rowsIn} rows read were quarantined` : 'more rows were quarantined';
  return new BatchScorerError(
    'E_ERROR_RATE',
    `${seen}, past --max-error-rate ${maxErrorRate}, which allows ${allowed} of the input's ${run.input.rows} rows; the rows and reasons are in errors.jsonl: fix the input, or resume the run with a higher --max-error-rate`,
  );
}

/** The error allowance of a run scored in one process (`score`). */
export class MemoryErrorAllowance implements ErrorAllowance {
  private readonly bySegment = new Map<number, number>();
  private total = 0;
  private over = false;

  /**
   * `allowance`: Infinity while the run's rows are not all planned (see allow). `before`: the
   * quarantined rows of each segment a resumed run finished earlier, by segment index.
   */
  constructor(
    private allowance: number,
    before: ReadonlyMap<number, number> = new Map(),
  ) {
    for (const [index, rows] of before) this.set(index, rows);
  }

  get allowed(): number {
    return this.allowance;
  }

  /**
   * The allowance once planning has counted the run's rows: a run scored while it is planned
   * cannot tell a share of rows it has not counted, so it goes past none until then.
   */
  allow(allowed: number): void {
    this.allowance = allowed;
    this.over ||= this.total > allowed;
  }

  /** The run's quarantined rows so far, all segments. */
  get used(): number {
    return this.total;
  }

  report(index: number, rows: number): boolean {
    this.set(index, rows);
    return this.over;
  }

  private set(index: number, rows: number): void {
    this.total += rows - (this.bySegment.get(index) ?? 0);
    this.bySegment.set(index, rows);
    this.over ||= this.total > this.allowance;
  }
}
