/** Prometheus metrics (prom-client), for `serve` and a worker: nothing a `score` run loads. */

// A process's registry, and what the scoring reports into it.
export { createMetricsRegistry } from './registry.js';
export { scoringMetrics } from './scoring-metrics.js';

// `serve`'s collectors: queue depths, run outcomes from the event stream, held runs' drift.
export { collectQueueDepths } from './queue-depths.js';
export { collectRunDrift } from './run-drift.js';
export { trackRunOutcomes } from './run-outcomes.js';
