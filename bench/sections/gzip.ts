/**
 * 7. gzip: the same rows as .csv and as .csv.gz, scored directly and through the queue (2 workers,
 * no latency, default options). Decompressing (and, for a gzipped input, compressing the output,
 * the default) should cost little beside the scoring. The direct plain run is the memory
 * section's where the sizes are the same.
 */
import { REDIS_URL } from '../context.js';
import { queueRun } from '../queue-run.js';
import type { Section } from '../report.js';
import { defaultScore, rawScore } from '../score-run.js';

const RATIO_TARGET = 1.3;

export const gzip: Section = {
  id: 'gzip',
  title: 'gzip: .csv.gz against .csv',
  async run(ctx, report) {
    const sizes = ctx.rowList('BENCH_GZIP_ROWS', [1_000_000], [1_000_000, 10_000_000]);
    const queue = await ctx.redisAnswers();
    if (!queue) report.note(`queue runs skipped: no Redis answers at ${REDIS_URL}`);
    for (const rows of sizes) {
      const label = `${rows.toLocaleString('en-US')} rows`;
      const [plain, gz] = [await defaultScore(ctx, 'csv', rows), await defaultScore(ctx, 'csv.gz', rows)];
      report.raw.push(rawScore(plain), rawScore(gz));
      report.figure(`direct, ${label}: time .csv`, plain.wallSeconds, 's');
      report.figure(`direct, ${label}: time .csv.gz`, gz.wallSeconds, 's');
      report.figure(`direct, ${label}: time gz / plain`, gz.wallSeconds / plain.wallSeconds, 'x', { atMost: RATIO_TARGET });
      report.figure(`direct, ${label}: peak RSS .csv`, plain.peakRssMiB, 'MiB');
      report.figure(`direct, ${label}: peak RSS .csv.gz`, gz.peakRssMiB, 'MiB');
      if (!queue) continue;
      const sim = await ctx.simulator();
      const timed = [];
      for (const format of ['csv', 'csv.gz'] as const) {
        const r = await queueRun({ workers: 2, serviceUrl: sim.url, input: await ctx.input(rows, format), out: ctx.runsDir, options: {} });
        report.raw.push({ ...r, rows, format });
        report.figure(`queue (2 workers), ${label}: time .${format}`, r.seconds, 's');
        timed.push(r.seconds);
      }
      report.figure(`queue (2 workers), ${label}: time gz / plain`, timed[1] / timed[0], 'x', { atMost: RATIO_TARGET });
    }
  },
};
