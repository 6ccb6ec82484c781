import type { RequestOutcome, RequestSlots, ServiceError } from '../service/index.js';

/**
 * How one predict attempt ended: `answered` (and aligned), `overloaded` (429, 503, 504, no answer
 * in time, a reset), `bad-rows` (the engine failed on rows of the batch), `bad-answer` (rows
 * missing, extra or out of order), or `failed` for any other error.
 */
export type PredictOutcome = 'answered' | 'overloaded' | 'bad-rows' | 'bad-answer' | 'failed';

/** How scoring a segment ended: done marker written, failed, or stopped (Ctrl-C, a worker's shutdown, a lost lock). */
export type SegmentOutcome = 'scored' | 'failed' | 'stopped';

/**
 * Hears what scoring does, for a process's metrics: the scoring core reports through it and knows
 * nothing of what listens. It counts work done, so a segment scored again after a crash is heard
 * twice; the manifest's counts do not come from it. Calls must be cheap and must not throw.
 */
export interface ScoringObserver {
  /** A segment starts under these request slots; the slots of the segments in progress bound the process's requests. */
  segmentStarted(slots: RequestSlots): void;
  /** The segment that started under `slots` ended. */
  segmentEnded(slots: RequestSlots, outcome: SegmentOutcome): void;
  /** A predict call took one of its slots; its attempts and the waits between them happen inside the slot. */
  requestStarted(): void;
  /** The predict call gave its slot back. */
  requestEnded(): void;
  /** One attempt (one HTTP request) of a predict call ended, after `seconds`. */
  requestDone(outcome: PredictOutcome, seconds: number): void;
  /** A predict call is to be tried again. */
  retry(): void;
  /** Rows finished and written: scored, and quarantined (malformed or refused by the engine). */
  rows(scored: number, quarantined: number): void;
}

/** An attempt's outcome from its error (none when it was answered). */
export function predictOutcome(error: ServiceError | undefined): PredictOutcome {
  if (error === undefined) return 'answered';
  if (error.overload) return 'overloaded';
  return error.kind === 'bad-rows' || error.kind === 'bad-answer' ? error.kind : 'failed';
}

/** What an attempt says about the service's load, as request slots learn it. */
export function loadOutcome(outcome: PredictOutcome): RequestOutcome {
  return outcome === 'answered' || outcome === 'overloaded' ? outcome : 'failed';
}
