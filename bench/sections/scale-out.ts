/**
 * 5. Scale-out: the same latency-bound run by 1, 2 and 4 worker processes, with default options
 * (workers with no flags; the run sets no concurrency and no segment options). The model waits
 * 100 ms per request, so the workers wait on it rather than on this machine's cores, and the rate
 * should grow with the workers in flight. Timed from the enqueue call to completion
 * (queue-run.ts); the outputs of every worker count are compared byte for byte.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { REDIS_URL } from '../context.js';
import { queueRun, type QueueRunResult } from '../queue-run.js';
import type { Section } from '../report.js';
import { takeRunFolder } from '../run-folder.js';

const LATENCY_MS = 100;
const WORKER_COUNTS = [1, 2, 4];
const SPEEDUP_TARGETS: Record<number, number> = { 2: 1.9, 4: 3.6 };

export const scaleOut: Section = {
  id: 'scale-out',
  title: 'Scale-out: queue workers against a slow model',
  async run(ctx, report) {
    if (!(await ctx.redisAnswers())) return report.note(`skipped: no Redis answers at ${REDIS_URL}`);
    const rows = ctx.rows('BENCH_SCALEOUT_ROWS', 240_000, 480_000);
    const options = { batchSize: 100 };
    const sim = await ctx.simulator(['--latency-ms', String(LATENCY_MS)]);
    const input = await ctx.input(rows, 'csv');
    report.note(`${rows.toLocaleString('en-US')} rows, latency ${LATENCY_MS} ms, batch ${options.batchSize}; worker and run options left at their defaults`);
    const results: QueueRunResult[] = [];
    const digests: string[] = [];
    for (const workers of WORKER_COUNTS) {
      const readFacts = (runId: string) => takeRunFolder(ctx.runsDir, runId, async (folder) => void digests.push(await outputDigest(folder)));
      const r = await queueRun({ workers, serviceUrl: sim.url, input, out: ctx.runsDir, options, readFacts });
      results.push(r);
      report.raw.push({ ...r, rows });
      report.figure(`${workers} worker${workers > 1 ? 's' : ''}: rows/s`, rows / r.seconds, 'rows/s');
      report.figure(`${workers} worker${workers > 1 ? 's' : ''}: workers that scored segments`, `${new Set(r.facts.workers).size} of ${workers}`);
    }
    for (const r of results.slice(1)) {
      report.figure(`speedup ${r.workers} vs 1 worker`, results[0].seconds / r.seconds, 'x', { atLeast: SPEEDUP_TARGETS[r.workers] });
    }
    report.figure('outputs byte-identical across worker counts', new Set(digests).size === 1 ? 'yes' : `no: ${digests.join(', ')}`);
  },
};

/** The SHA-256 of a run folder's outputs (`predictions*`, `errors*`), file names included. */
async function outputDigest(folder: string): Promise<string> {
  const hash = createHash('sha256');
  const names = (await readdir(folder)).filter((n) => n.startsWith('predictions') || n.startsWith('errors')).sort();
  for (const name of names) hash.update(`${name}\n`).update(await readFile(`${folder}/${name}`));
  return hash.digest('hex');
}
