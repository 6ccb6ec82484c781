/**
 * 3. Memory: peak RSS of `score` on CSV and on JSON Lines at 1M, 5M and 10M rows. A streaming
 * scorer's peak should not depend on the file's size: each larger size's peak is compared with the
 * smallest's.
 */
import type { Section } from '../report.js';
import { defaultScore, rawScore } from '../score-run.js';

const TARGET_MIB = 150;
const GROWTH_TARGET = 1.1;

export const memory: Section = {
  id: 'memory',
  title: 'Memory: peak RSS of score',
  async run(ctx, report) {
    const sizes = ctx.rowList('BENCH_MEMORY_ROWS', [1_000_000, 5_000_000, 10_000_000], [1_000_000, 5_000_000, 10_000_000]);
    for (const format of ['csv', 'jsonl'] as const) {
      const peaks: number[] = [];
      for (const rows of sizes) {
        const r = await defaultScore(ctx, format, rows);
        report.raw.push(rawScore(r));
        peaks.push(r.peakRssMiB);
        report.figure(`${format}, ${rows.toLocaleString('en-US')} rows: peak RSS`, r.peakRssMiB, 'MiB', { atMost: TARGET_MIB });
      }
      for (let i = 1; i < sizes.length; i++) {
        const name = `${format}: peak RSS at ${sizes[i].toLocaleString('en-US')} / at ${sizes[0].toLocaleString('en-US')} rows`;
        report.figure(name, peaks[i] / peaks[0], 'x', { atMost: GROWTH_TARGET });
      }
    }
  },
};
