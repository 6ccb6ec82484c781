import pLimit, { type LimitFunction } from 'p-limit';

/** How one attempt at a request went, as far as the service's load is concerned. */
export type RequestOutcome = 'answered' | 'overloaded' | 'failed';

/** Bounds the predict requests in flight; the adaptive kind also learns from how they went. */
export interface RequestSlots {
  /**
   * Runs a request when a slot is free. Slots shared with other processes stop waiting
   * when `signal` aborts (AbortedError); local ones let the request start and fail.
   */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /**
   * Tells the slots how an attempt went: `answered` (in `ms`), `overloaded` (429, 503, 504, no
   * answer in time, a reset), or `failed` for any other error, which says nothing about load.
   */
  observe(outcome: RequestOutcome, ms?: number): void;
  /** Slots now; batches a segment keeps ahead of its writer follow it. */
  readonly concurrency: number;
}

/** `--concurrency N`: N slots, whatever happens. */
export function fixedSlots(concurrency: number): RequestSlots {
  const gate = pLimit(concurrency);
  return { run: (fn) => gate(fn), observe: () => {}, concurrency };
}

/** Bounds of `--concurrency auto`. */
export const AUTO_SLOTS = { initial: 2, min: 1, max: 16 } as const;

/** How long `auto` holds just below a level the service refused before it tries that level again. */
export const PROBE_AFTER_MS = 30_000;

/**
 * `--concurrency auto`: finds what the service sustains and stays there. It starts at 2 and adds a
 * slot after every `concurrency` attempts answered in a row (one per round trip), as TCP does. An
 * overload (429, 503, 504, no answer in time, a reset) marks the level it met as the service's ceiling:
 * the level steps one slot below it and holds there, trying the ceiling again only after
 * PROBE_AFTER_MS, since each overload costs a Retry-After wait that holds up the rows behind it.
 * An overload soon after another (within ten round trips) is a service that got slower, not a
 * probe: the level halves then. The attempts sent into one overload count once (at most one
 * decrease per two round trips). Other failures neither grow nor shrink it.
 */
export class AdaptiveSlots implements RequestSlots {
  private readonly gate: LimitFunction;
  private answered = 0;
  private lastOverload = -Infinity;
  /** The lowest level an overload was met at since the last probe; Infinity before any. */
  private ceiling = Infinity;
  /** Average time an answered attempt takes (exponentially weighted). */
  private roundTripMs = 0;

  /**
   * @param bounds slots at the start and the range they move in
   */
  constructor(
    private readonly bounds: { initial: number; min: number; max: number } = AUTO_SLOTS,
    private readonly now: () => number = Date.now,
  ) {
    this.gate = pLimit(Math.min(bounds.initial, bounds.max));
  }

  get concurrency(): number {
    return this.gate.concurrency;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.gate(fn);
  }

  observe(outcome: RequestOutcome, ms?: number): void {
    if (outcome === 'failed') return;
    const now = this.now();
    if (outcome === 'answered') {
      if (ms !== undefined) this.roundTripMs = this.roundTripMs === 0 ? ms : 0.8 * this.roundTripMs + 0.2 * ms;
      if (++this.answered < this.gate.concurrency || this.gate.concurrency >= this.bounds.max) return;
      this.answered = 0;
      const belowCeiling = this.gate.concurrency + 1 < this.ceiling;
      if (belowCeiling || now - this.lastOverload >= PROBE_AFTER_MS) this.gate.concurrency += 1;
      return;
    }
    this.answered = 0;
    const since = now - this.lastOverload;
    if (since < 2 * this.roundTripMs) return;
    this.lastOverload = now;
    const slots = this.gate.concurrency;
    this.ceiling = Math.min(this.ceiling === Infinity || since >= PROBE_AFTER_MS ? slots : this.ceiling, slots);
    const next = since < 10 * this.roundTripMs ? Math.floor(slots / 2) : slots - 1;
    this.gate.concurrency = Math.max(this.bounds.min, next);
  }
}

/** The slots for a run's `--concurrency` in one process: N fixed slots, or `auto`. */
export function createRequestSlots(concurrency: number | 'auto'): RequestSlots {
  return concurrency === 'auto' ? new AdaptiveSlots() : fixedSlots(concurrency);
}

/** The most requests a `--concurrency` may have in flight: what a connection pool must hold. */
export function maxConcurrency(concurrency: number | 'auto'): number {
  return concurrency === 'auto' ? AUTO_SLOTS.max : concurrency;
}
