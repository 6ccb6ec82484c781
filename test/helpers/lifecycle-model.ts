import { expect } from 'vitest';
import type { RunOptionsInput } from '../../src/config/run-options.js';
import type { Verdict } from '../../src/scoring/judge-run.js';
import type { EndingState } from '../../src/scoring/run-lifecycle.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { rentalsText } from './scoring.js';

/**
 * How a request to score a run is made to end, in either mode: each test makes it so its own way
 * (a cap, a stop, bad rows past --max-error-rate, a drift past --drift-fail, a process killed).
 * `stopped`: stopped on request (`score` interrupted, a queued run cancelled); `crash`: its process
 * dies before the attempt ends.
 */
export const ENDINGS = ['succeeded', 'stopped', 'expired', 'error-rate', 'held', 'crash'] as const;
export type Ending = (typeof ENDINGS)[number];

/** The baseline run the `held` ending drifts from: a run of `rentalsText(rows)` the test scores first. */
export const BASELINE_RUN = 'base';

/**
 * The input of a modelled run: every sqft half again as large as the baseline's (past --drift-fail
 * 0.25), and one row in each segment of `segmentRows` failing the engine (past --max-error-rate 0).
 */
export function modelRunInput(rows: number, segmentRows: number): string {
  return rentalsText(rows, (row, i) => {
    row.sqft = String(Math.round(Number(row.sqft) * 1.5));
    if (i % segmentRows === 5) row.location = ENGINE_ERROR_VALUE;
  });
}

/**
 * The options that make an attempt on modelRunInput end as `ending`: a cap (a deadline past, or
 * --max-requests `cap`), --max-error-rate 0, or a drift past --drift-fail from BASELINE_RUN; none
 * for the others (which a test makes end its own way).
 */
export function endingOptions(ending: Ending, cap: number | 'deadline'): RunOptionsInput {
  if (ending === 'expired') return cap === 'deadline' ? { deadline: '2020-01-01T00:00:00Z' } : { maxRequests: cap };
  if (ending === 'error-rate') return { maxErrorRate: 0 };
  if (ending === 'held') return { baselineRun: BASELINE_RUN, driftFail: 0.25 };
  return {};
}

/** What a run tells of itself, as every view must tell it: an attempt started, or ended in a state. */
export type Told = { kind: 'start'; attempt: number } | { kind: 'end'; attempt: number; state: EndingState };

/** What `judge` answers: the run was judged (it ends again), had been judged so already, or is no held run (refused). */
export type Judged = 'judged' | 'already' | 'refused';

/**
 * The model of one run id's lifecycle (see run-lifecycle.ts and run-attempt.ts), against which the
 * model-based tests check every observer: what its manifest says, its attempts, and the story its
 * listeners must hear. A request to score a run that succeeded, is held, or was rejected is refused
 * and tells nothing; any other begins an attempt, or goes on with the one a crash left open (no
 * second start), and ends it once; a held run ends again, as the same attempt, when it is judged.
 */
export class RunModel {
  /** The state the run's manifest records; undefined while no attempt has ended. */
  state: EndingState | undefined;
  /** Attempts begun. */
  attempts = 0;
  /** The last attempt began, and its process died before it ended. */
  open = false;
  /** How the held run was judged. */
  judged: Verdict | undefined;
  /** Every start and end told so far, in order. */
  readonly told: Told[] = [];

  /** @param stoppedAs the state a run stopped on request ends in, in the mode tested */
  constructor(private readonly stoppedAs: EndingState) {}

  /** A run has claimed the folder: a request for another output under its id is refused. */
  get claimed(): boolean {
    return this.attempts > 0;
  }

  /** Whether a request to score the run again is refused: it succeeded, is held for a judgement, or was rejected (failed for good). */
  get refusesScore(): boolean {
    return this.state === 'succeeded' || this.state === 'held' || this.judged === 'reject';
  }

  /** The state an attempt made to end as `ending` records (none for a crash). */
  endsIn(ending: Exclude<Ending, 'crash'>): EndingState {
    return ending === 'stopped' ? this.stoppedAs : ending === 'error-rate' ? 'failed' : ending;
  }

  /** A request to score the run (a start or a resume) that ends as `ending`. */
  score(ending: Ending): void {
    if (this.refusesScore) return;
    if (!this.open) {
      this.attempts++;
      this.told.push({ kind: 'start', attempt: this.attempts });
    }
    this.open = ending === 'crash';
    if (ending !== 'crash') this.end(this.endsIn(ending));
  }

  /**
   * The run is cancelled before a worker took it (queue mode), its first request: it ends without
   * having begun an attempt (attempt 0), and writes nothing in its folder.
   */
  cancelQueued(): void {
    this.state = 'cancelled';
    this.told.push({ kind: 'end', attempt: 0, state: 'cancelled' });
  }

  /** Someone judges the run: only a held one is judged, once; the same verdict again changes nothing. */
  judge(verdict: Verdict): Judged {
    if (this.judged === verdict) return 'already';
    if (this.state !== 'held') return 'refused';
    this.judged = verdict;
    this.end(verdict === 'accept' ? 'succeeded' : 'failed');
    return 'judged';
  }

  /** The last end told: the run's state and result. */
  get lastEnd(): Extract<Told, { kind: 'end' }> | undefined {
    return this.told.findLast((t) => t.kind === 'end');
  }

  /** The last end of an attempt, which the run's manifest records (an end without one writes nothing). */
  get lastRecorded(): Extract<Told, { kind: 'end' }> | undefined {
    return this.told.findLast((t): t is Extract<Told, { kind: 'end' }> => t.kind === 'end' && t.attempt > 0);
  }

  private end(state: EndingState): void {
    this.state = state;
    this.told.push({ kind: 'end', attempt: this.attempts, state });
  }
}

/**
 * Checks the shape of a story as one observer heard it, whatever the model says: attempts numbered
 * 1, 2, ... in order, each started once and ended once, its end told after its start; the only
 * second end of an attempt is a held one's judgement (succeeded or failed). An end of attempt 0
 * (a queued run cancelled before it began one) comes while no attempt is under way.
 */
export function expectOneEndPerAttempt(told: readonly Told[]): void {
  let started = 0;
  let ends: EndingState[] = [];
  for (const t of told) {
    if (t.kind === 'start') {
      expect(t.attempt, 'attempts are numbered 1, 2, ... in order').toBe(started + 1);
      expect(started === 0 || ends.length > 0, `attempt ${started} ended before attempt ${t.attempt} started`).toBe(true);
      started = t.attempt;
      ends = [];
      continue;
    }
    if (t.attempt === 0) {
      expect(started === 0 || ends.length > 0, `an end of no attempt while attempt ${started} is under way`).toBe(true);
      continue;
    }
    expect(t.attempt, 'an end is of the attempt started last').toBe(started);
    const judged = ends.length === 1 && ends[0] === 'held' && (t.state === 'succeeded' || t.state === 'failed');
    expect(ends.length === 0 || judged, `attempt ${t.attempt} ended twice: ${[...ends, t.state].join(', ')}`).toBe(true);
    ends.push(t.state);
  }
}
