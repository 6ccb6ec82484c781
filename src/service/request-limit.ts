import pLimit, { type LimitFunction } from 'p-limit';

/** How a request went, as far as the service's load is concerned. */
export type RequestOutcome = 'answered' | 'overloaded';

/** Bounds the predict requests in flight; the adaptive kind also learns from how they went. */
export interface RequestLimit {
  /** Runs a request when a slot is free. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Tells the limit how a request went (`answered`, or met 429/503/timeout/reset: `overloaded`). */
  observe(outcome: RequestOutcome): void;
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
 * multiplicative decrease). It starts at 2, adds a slot after every `concurrency` requests
 * answered in a row, and halves when a request meets overload (a 429, 503, timeout or reset), at
 * most once per two round trips, so that the requests already sent into one overload count once.
 */
export class AdaptiveLimit implements RequestLimit {
  private readonly limit: LimitFunction;
  private answered = 0;
  private lastDecrease = -Infinity;
  /** Average time a request takes, from the moment it gets a slot (exponentially weighted). */
  private roundTripMs = 0;

  constructor(
    private readonly bounds: { initial: number; min: number; max: number } = AUTO_LIMIT,
    private readonly now: () => number = Date.now,
  ) {
    this.limit = pLimit(bounds.initial);
  }

  get concurrency(): number {
    return this.limit.concurrency;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.limit(async () => {
      const start = this.now();
      try {
        return await fn();
      } finally {
        const took = this.now() - start;
        this.roundTripMs = this.roundTripMs === 0 ? took : 0.8 * this.roundTripMs + 0.2 * took;
      }
    });
  }

  observe(outcome: RequestOutcome): void {
    if (outcome === 'answered') {
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

/** The limit for a run's `--concurrency`: N fixed slots, or `auto`. */
export function createRequestLimit(concurrency: number | 'auto'): RequestLimit {
  return concurrency === 'auto' ? new AdaptiveLimit() : fixedLimit(concurrency);
}

/** The most requests a `--concurrency` may have in flight: what a connection pool must hold. */
export function maxConcurrency(concurrency: number | 'auto'): number {
  return concurrency === 'auto' ? AUTO_LIMIT.max : concurrency;
}
