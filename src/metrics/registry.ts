import { collectDefaultMetrics, Counter, Registry } from 'prom-client';

/**
 * prom-client's gauges named `_total`, which Prometheus reserves for counters (`promtool check
 * metrics` says so). Their labelled siblings (`nodejs_active_handles{type}`, ...) stay and sum to them.
 */
const MISNAMED_DEFAULT_METRICS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * A process's own metrics registry, with prom-client's process metrics (CPU, memory, event loop
 * lag, GC, handles: `process_*`, `nodejs_*`, unprefixed, as dashboards for Node expect them).
 * Never the global default registry: tests run several workers' registries in one process.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  return registry;
}

/**
 * A counter labelled by `outcome` alone, each outcome present at 0 from the start: a series that
 * appears only once something happened cannot be told apart from a scrape that missed it.
 */
export function outcomeCounter<O extends string>(registry: Registry, name: string, help: string, outcomes: readonly O[]): Counter<'outcome'> {
  const counter = new Counter({ name, help, labelNames: ['outcome'] as const, registers: [registry] });
  for (const outcome of outcomes) counter.inc({ outcome }, 0);
  return counter;
}
