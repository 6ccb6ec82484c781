/**
 * 6. Adaptive concurrency: a server whose engine takes 8 requests at once and answers 429 beyond.
 * Fixed settings below, at and above its capacity, against `--concurrency auto`, which should find
 * about the best rate without the 429s of a setting too high.
 */
import type { Section } from '../report.js';
import { scoringRate } from '../run-folder.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const SETTINGS = ['4', '8', '16', 'auto'];
const TOO_HIGH = '16';

export const adaptiveConcurrency: Section = {
  id: 'adaptive',
  title: 'Adaptive concurrency against a server of capacity 8',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_ADAPTIVE_ROWS', 200_000, 400_000);
    const sim = await ctx.simulator(['--capacity', '8', '--latency-ms', '50', '--retry-after-seconds', '1']);
    const input = await ctx.input(rows, 'csv');
    report.note(
      `${rows.toLocaleString('en-US')} rows, batch 100, simulator --capacity 8 --latency-ms 50 --retry-after-seconds 1; rows/s over the scoring phase`,
    );
    const runs = new Map<string, ScoreResult>();
    for (const setting of SETTINGS) {
      const r = await scoreRun(ctx, {
        label: `concurrency ${setting}`,
        input,
        rows,
        serviceUrl: sim.url,
        flags: ['--batch-size', '100', '--concurrency', setting],
      });
      runs.set(setting, r);
      report.raw.push(rawScore(r));
      report.figure(`--concurrency ${setting}: rows/s`, scoringRate(rows, r.facts), 'rows/s');
      report.figure(`--concurrency ${setting}: retries (429s)`, r.facts.retries);
    }
    const auto = runs.get('auto')!;
    report.figure('auto: settled concurrency', auto.facts.concurrencySettled);
    const bestFixed = Math.max(...SETTINGS.filter((s) => s !== 'auto').map((s) => scoringRate(rows, runs.get(s)!.facts)));
    report.figure('auto: share of the best fixed setting’s rows/s', (scoringRate(rows, auto.facts) / bestFixed) * 100, '%', { atLeast: 90 });
    // Target: fewer 429s than the setting too high, i.e. at most one less than its count.
    const tooHigh = runs.get(TOO_HIGH)!.facts.retries;
    report.figure(`auto: retries (429s), against --concurrency ${TOO_HIGH}'s ${tooHigh}`, auto.facts.retries, '', { atMost: tooHigh - 1 });
  },
};
