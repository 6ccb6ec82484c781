import pLimit, { type LimitFunction } from 'p-limit';

/** How one attempt at a request went, as far as the service's load is concerned. */
export type RequestOutcome = 'answered' | 'overloaded' | 'failed';

/** Bounds the predict requests in flight; the adaptive kind also learns from how they went. */
export interface RequestLimit {
  /** Runs a request when a slot is free. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Tells the limit how an attempt went: `answered` (in `ms`), `overloaded` (429, 503, 504, no
   * answer in time, a reset), or `failed` for any other error, which says nothing about load.
   */
  observe(outcome: RequestOutcome, ms?: number): void;
  /** Slots now; batches a segment keeps ahead of its writer follow it. */
  readonly concurrency: number;
}

/** `--concurrency N`: N slots, whatever happens. */
export function fixedLimit(concurrency: number): RequestLimit {
  const limit = pLimit(concurrency);
  return { run: (fn) => limit(fn), observe: () => {}, concurrency };
}

/** Bounds of `--concurrency auto`. */
export const AUTO_LIMIT = { initial: 2, min: 1, max: 16 } as const;

/**
 * `--concurrency auto`: finds what the service sustains as TCP does (additive increase,
 * multiplicative decrease). It starts at 2, adds a slot after every `concurrency` attempts
 * answered in a row, and halves when an attempt meets overload, at most once per two round trips
 * (of answered attempts), so that the requests already sent into one overload count once. Other
 * failures neither grow nor shrink it.
 */
export class AdaptiveLimit implements RequestLimit {
  private readonly limit: LimitFunction;
  private answered = 0;
  private lastDecrease = -Infinity;
  /** Average time an answered attempt takes (exponentially weighted). */
  private roundTripMs = 0;

  /**
   * @param bounds slots at the start and the range they move in; in a worker, `max` is at most
   *   the worker's own slots, so that a cut is felt at once
   */
  constructor(
    private readonly bounds: { initial: number; min: number; max: number } = AUTO_LIMIT,
    private readonly now: () => number = Date.now,
  ) {
    this.limit = pLimit(Math.min(bounds.initial, bounds.max));
  }

  get concurrency(): number {
    return this.limit.concurrency;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.limit(fn);
  }

  observe(outcome: RequestOutcome, ms?: number): void {
    if (outcome === 'failed') return;
    if (outcome === 'answered') {
      if (ms !== undefined) this.roundTripMs = this.roundTripMs === 0 ? ms : 0.8 * this.roundTripMs + 0.2 * ms;
      if (++this.answered >= this.limit.concurrency && this.limit.concurrency < this.bounds.max) {
        this.limit.concurrency += 1;
        this.answered = 0;
      }
      return;
    }
    this.answered = 0;
    const now = this.now();
    if (now - this.lastDecrease < 2 * this.roundTripMs) return;
    this.lastDecrease = now;
    this.limit.concurrency = Math.max(this.bounds.min, Math.floor(this.limit.concurrency / 2));
  }
}

/** The limit for a run's `--concurrency`: N fixed slots, or `auto` (up to `ceiling` slots). */
export function createRequestLimit(concurrency: number | 'auto', ceiling: number = AUTO_LIMIT.max): RequestLimit {
  return concurrency === 'auto' ? new AdaptiveLimit({ ...AUTO_LIMIT, max: Math.min(AUTO_LIMIT.max, ceiling) }) : fixedLimit(concurrency);
}

/** The most requests a `--concurrency` may have in flight: what a connection pool must hold. */
export function maxConcurrency(concurrency: number | 'auto'): number {
  return concurrency === 'auto' ? AUTO_LIMIT.max : concurrency;
}
