/**
 * 7. gzip: the same rows as .csv and as .csv.gz, scored directly and through the queue (2 workers,
 * no latency, default options). Decompressing (and, for a gzipped input, compressing the output,
 * the default) should cost little beside the scoring. The first direct plain run is the memory
 * section's where the sizes are the same. Direct runs alternate, and their medians are compared:
 * a gzipped run costs about a second more at 1M rows (planning inflates the input, assembly
 * compresses the output), and one slow moment of the shared machine moves a single 1M-row run by
 * as much.
 */
import { REDIS_URL } from '../context.js';
import { median } from '../measure.js';
import { queueRun } from '../queue-run.js';
import type { Section } from '../report.js';
import { defaultScore, rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const RATIO_TARGET = 1.3;

/** Direct runs of each kind at a size: 3 up to 1M rows, 1 above (BENCH_GZIP_RUNS sets it). */
function directRuns(rows: number): number {
  return Number(process.env.BENCH_GZIP_RUNS ?? (rows <= 1_000_000 ? 3 : 1));
}

export const gzip: Section = {
  id: 'gzip',
  title: 'gzip: .csv.gz against .csv',
  async run(ctx, report) {
    const sizes = ctx.rowList('BENCH_GZIP_ROWS', [1_000_000], [1_000_000, 10_000_000]);
    const queue = await ctx.redisAnswers();
    if (!queue) report.note(`queue runs skipped: no Redis answers at ${REDIS_URL}`);
    for (const rows of sizes) {
      const label = `${rows.toLocaleString('en-US')} rows`;
      const sim = await ctx.simulator();
      const plain: ScoreResult[] = [await defaultScore(ctx, 'csv', rows)];
      const gz: ScoreResult[] = [await defaultScore(ctx, 'csv.gz', rows)];
      const runs = directRuns(rows);
      for (let i = 1; i < runs; i++) {
        for (const [format, into] of [['csv', plain] as const, ['csv.gz', gz] as const]) {
          into.push(await scoreRun(ctx, { label: `${format} ${rows} (${i + 1})`, input: await ctx.input(rows, format), rows, serviceUrl: sim.url }));
        }
      }
      report.raw.push(...plain.map(rawScore), ...gz.map(rawScore));
      const [plainTime, gzTime] = [median(plain.map((r) => r.wallSeconds)), median(gz.map((r) => r.wallSeconds))];
      if (runs > 1) report.note(`direct, ${label}: median of ${runs} alternating runs each`);
      report.figure(`direct, ${label}: time .csv`, plainTime, 's');
      report.figure(`direct, ${label}: time .csv.gz`, gzTime, 's');
      report.figure(`direct, ${label}: time gz / plain`, gzTime / plainTime, 'x', { atMost: RATIO_TARGET });
      report.figure(`direct, ${label}: peak RSS .csv`, Math.max(...plain.map((r) => r.peakRssMiB)), 'MiB');
      report.figure(`direct, ${label}: peak RSS .csv.gz`, Math.max(...gz.map((r) => r.peakRssMiB)), 'MiB');
      if (!queue) continue;
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
