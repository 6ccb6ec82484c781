/**
 * 4. Growth: time and peak RSS of `score` (CSV) as the file grows tenfold, as a table and as a
 * plot. The memory section's runs are reused where the sizes are the same.
 */
import { writeFile } from 'node:fs/promises';
import { BENCH_DIR } from '../context.js';
import { describeMachine } from '../machine.js';
import { growthSvg } from '../plot.js';
import type { Section } from '../report.js';
import { defaultScore, rawScore } from '../score-run.js';

export const growth: Section = {
  id: 'growth',
  title: 'Growth: time and peak RSS against rows (CSV)',
  async run(ctx, report) {
    const sizes = ctx.rowList('BENCH_GROWTH_ROWS', [100_000, 1_000_000], [100_000, 1_000_000, 10_000_000]);
    const points = [];
    for (const rows of sizes) {
      const r = await defaultScore(ctx, 'csv', rows);
      report.raw.push(rawScore(r));
      points.push({ rows, seconds: r.wallSeconds, peakRssMiB: r.peakRssMiB });
      const label = `${rows.toLocaleString('en-US')} rows`;
      report.figure(`${label}: time`, r.wallSeconds, 's');
      report.figure(`${label}: rows/s`, rows / r.wallSeconds, 'rows/s');
      report.figure(`${label}: peak RSS`, r.peakRssMiB, 'MiB');
    }
    const machine = describeMachine();
    const title = `batch-scorer score, CSV: ${machine.cpu} × ${machine.cores}, ${machine.date}${ctx.full ? '' : ' (quick)'}`;
    // A scaled (smoke) run does not replace the committed plot.
    const path = ctx.scale === 1 ? 'bench/growth.svg' : `${BENCH_DIR}/growth.svg`;
    await writeFile(path, growthSvg(title, points));
    report.note(`plot written to ${path}`);
  },
};
