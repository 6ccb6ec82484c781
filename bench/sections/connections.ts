/**
 * 8. Connections: keep-alive should make the connections opened to the model service about the
 * concurrency, not the number of requests. Read from the manifests of the CPU-bound and
 * latency-bound sections' runs, so it has figures only when those sections ran.
 */
import type { Section } from '../report.js';

export const connections: Section = {
  id: 'connections',
  title: 'Connections to the model service',
  // eslint-disable-next-line @typescript-eslint/require-await -- a section is async; this one only reads others' figures
  async run(ctx, report) {
    if (ctx.connections.length === 0) return report.note('no figures: the CPU-bound and latency-bound sections did not run or failed');
    for (const c of ctx.connections) {
      report.note(`${c.run}: ${c.requests} requests at concurrency ${c.concurrency}`);
      // "About the concurrency": up to twice it (describe's own pool, a connection replaced now and then).
      report.figure(`${c.run}: connections opened (concurrency ${c.concurrency})`, c.serviceConnections, '', { atMost: 2 * c.concurrency });
    }
  },
};
