/**
 * 5. Scale-out: the same latency-bound run by 1, 2 and 4 worker processes. The model waits 100 ms
 * per request, so the workers wait on it rather than on this machine's cores, and the rate should
 * grow with the workers in flight. Timed from the enqueue call to completion (queue-run.ts).
 */
import { REDIS_URL } from '../context.js';
import { queueRun, type QueueRunResult } from '../queue-run.js';
import type { Section } from '../report.js';

const LATENCY_MS = 100;
const WORKER_COUNTS = [1, 2, 4];
const SPEEDUP_TARGETS: Record<number, number> = { 2: 1.9, 4: 3.6 };

export const scaleOut: Section = {
  id: 'scale-out',
  title: 'Scale-out: queue workers against a slow model',
  async run(ctx, report) {
    if (!(await ctx.redisAnswers())) return report.note(`skipped: no Redis answers at ${REDIS_URL}`);
    const rows = ctx.rows('BENCH_SCALEOUT_ROWS', 240_000, 480_000);
    // Scaled with the rows, so that a smoke run still has several segments to share. The run sets
    // no --concurrency: each worker's own bounds it, so each worker added adds slots.
    const options = { batchSize: 100, segmentRows: Math.max(1000, Math.round(10_000 * ctx.scale)) };
    const workerSlots = 4;
    const sim = await ctx.simulator(['--latency-ms', String(LATENCY_MS)]);
    const input = await ctx.input(rows, 'csv');
    report.note(
      `${rows.toLocaleString('en-US')} rows, latency ${LATENCY_MS} ms, batch ${options.batchSize}, worker concurrency ${workerSlots}, segments of ${options.segmentRows} rows`,
    );
    const results: QueueRunResult[] = [];
    for (const workers of WORKER_COUNTS) {
      const r = await queueRun({ workers, workerFlags: ['--concurrency', String(workerSlots)], serviceUrl: sim.url, input, out: ctx.runsDir, options });
      results.push(r);
      report.raw.push({ ...r, rows });
      report.figure(`${workers} worker${workers > 1 ? 's' : ''}: rows/s`, rows / r.seconds, 'rows/s');
      report.figure(`${workers} worker${workers > 1 ? 's' : ''}: workers that scored segments`, `${new Set(r.facts.workers).size} of ${workers}`);
    }
    for (const r of results.slice(1)) {
      report.figure(`speedup ${r.workers} vs 1 worker`, results[0].seconds / r.seconds, 'x', { atLeast: SPEEDUP_TARGETS[r.workers] });
    }
  },
};
