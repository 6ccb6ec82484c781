import type { Queue } from '../queue/index.js';
import { Gauge, type Registry } from 'prom-client';

/** The job states a queue's depth is counted in. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'waiting-children', 'completed', 'failed', 'prioritized'] as const;

/** How long a scrape waits for Redis to count jobs; beyond it, the scrape answers without queue depths. */
const COUNT_TIMEOUT_MS = 2_000;

/**
 * `batch_scorer_queue_jobs{queue, state}`: the jobs in each state of each queue, counted in
 * Redis (getJobCounts) when the metrics are scraped. While Redis does not answer, the gauge is
 * left out of the scrape rather than showing old counts, and the scrape still answers.
 */
export function collectQueueDepths(registry: Registry, queues: Queue[]): void {
  new Gauge({
    name: 'batch_scorer_queue_jobs',
    help: 'Jobs in each queue (runs, segments, schedules) by state, counted when scraped; completed and failed jobs are kept for their retention only.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), COUNT_TIMEOUT_MS)));
      const counted = Promise.all(queues.map(async (q) => ({ queue: q.name, counts: await q.getJobCounts(...QUEUE_STATES) })));
      const all = await Promise.race([counted.catch(() => undefined), timeout]).finally(() => clearTimeout(timer));
      for (const { queue, counts } of all ?? []) for (const state of QUEUE_STATES) this.set({ queue, state }, counts[state] ?? 0);
    },
  });
}
