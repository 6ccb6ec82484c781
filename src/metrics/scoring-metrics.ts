import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PredictOutcome, ScoringObserver, SegmentOutcome } from '../scoring/index.js';
import type { RequestSlots } from '../service/index.js';
import { outcomeCounter } from './registry.js';

/** Predict latency buckets, in seconds: from a fast local model to the default 60 s time limit and beyond. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The metrics of the scoring a process does (a worker), registered in `registry`, and the
 * observer that feeds them. Everything counts work done: a segment scored again after a crash
 * counts again. `maxConcurrency` is the process's own bound on requests in flight (a worker's
 * `--concurrency`), which the slots of its segments together never pass.
 */
export function scoringMetrics(registry: Registry, options: { maxConcurrency: number }): ScoringObserver {
  const registers = [registry];
  const rows = outcomeCounter(
    registry,
    'batch_scorer_rows_total',
    'Rows this process finished, by outcome: scored, or quarantined (malformed, or refused by the engine).',
    ['scored', 'quarantined'],
  );
  const requests = outcomeCounter(
    registry,
    'batch_scorer_predict_requests_total',
    'Predict HTTP requests this process sent, by outcome: answered, overloaded, bad-rows, bad-answer, failed. Each retry is one more.',
    ['answered', 'overloaded', 'bad-rows', 'bad-answer', 'failed'] satisfies PredictOutcome[],
  );
  const latency = new Histogram({
    name: 'batch_scorer_predict_duration_seconds',
    help: 'Time from sending a predict request to its answer or failure, by outcome (waits between retries not included).',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const retries = new Counter({
    name: 'batch_scorer_predict_retries_total',
    help: 'Predict requests tried again after a passing failure (overload, network, a bad answer, an engine failure once).',
    registers,
  });
  const inFlight = new Gauge({
    name: 'batch_scorer_predict_requests_in_flight',
    help: 'Predict calls holding a slot of the concurrency limit now (sending, or waiting to retry).',
    registers,
  });
  const segments = outcomeCounter(
    registry,
    'batch_scorer_segments_total',
    'Segments this process stopped working on, by outcome: scored, failed, or stopped (shutdown, a lost lock).',
    ['scored', 'failed', 'stopped'] satisfies SegmentOutcome[],
  );
  // The slots of the segments in progress, each with how many of its segments are in progress:
  // the segments of one run share their slots.
  const segmentSlots = new Map<RequestSlots, number>();
  new Gauge({
    name: 'batch_scorer_predict_concurrency_limit',
    help: 'Predict requests this process may have in flight now: the limits of the runs it is scoring (their --concurrency, or what auto found), at most the worker --max-in-flight; 0 while idle.',
    registers,
    collect() {
      let sum = 0;
      for (const slots of segmentSlots.keys()) sum += slots.concurrency;
      this.set(Math.min(sum, options.maxConcurrency));
    },
  });

  return {
    segmentStarted: (slots) => void segmentSlots.set(slots, (segmentSlots.get(slots) ?? 0) + 1),
    segmentEnded: (slots, outcome) => {
      const left = (segmentSlots.get(slots) ?? 1) - 1;
      if (left > 0) segmentSlots.set(slots, left);
      else segmentSlots.delete(slots);
      segments.inc({ outcome });
    },
    requestStarted: () => inFlight.inc(),
    requestEnded: () => inFlight.dec(),
    requestDone: (outcome, seconds) => {
      requests.inc({ outcome });
      latency.observe({ outcome }, seconds);
    },
    retry: () => retries.inc(),
    rows: (scored, quarantined) => {
      if (scored > 0) rows.inc({ outcome: 'scored' }, scored);
      if (quarantined > 0) rows.inc({ outcome: 'quarantined' }, quarantined);
    },
  };
}
