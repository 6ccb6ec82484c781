/**
 * 6. Adaptive concurrency: a server whose engine takes 8 requests at once and answers 429 beyond.
 * Fixed settings below, at and above its capacity, against `--concurrency auto`, which should find
 * about the best rate without the 429s of a setting too high: in one `score` process, then for a
 * queued run scored by 4 workers of 4 slots each, where the run's --concurrency is one budget for
 * all of them (held in Redis) and `auto` one level they all move.
 */
import { REDIS_URL } from '../context.js';
import { queueRun, type QueueRunResult } from '../queue-run.js';
import type { Section, SectionReport } from '../report.js';
import { scoringRate } from '../run-folder.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const SETTINGS = ['4', '8', '16', 'auto'];
const TOO_HIGH = '16';
/**
 * Retries the setting too high is given. Past the server's capacity a retry, waiting out its
 * Retry-After, loses most races for a freed engine thread to requests sent meanwhile; with the
 * default 6 a batch now and then lost 7 in a row and the run failed, leaving the section without
 * its figures. Given more, it is measured (its rate and its 429s) rather than failed.
 */
const TOO_HIGH_RETRIES = 20;
const WORKERS = 4;
const WORKER_SLOTS = 4;

/** Holds auto's rate to 90% of the best fixed setting's, and its 429s below the setting too high's. */
function judgeAuto(report: SectionReport, what: string, rate: (setting: string) => number, retries: (setting: string) => number): void {
  const bestFixed = Math.max(...SETTINGS.filter((s) => s !== 'auto').map(rate));
  report.figure(`${what}auto: share of the best fixed setting’s rows/s`, (rate('auto') / bestFixed) * 100, '%', { atLeast: 90 });
  // Target: fewer 429s than the setting too high, i.e. at most one less than its count.
  const tooHigh = retries(TOO_HIGH);
  report.figure(`${what}auto: retries (429s), against --concurrency ${TOO_HIGH}'s ${tooHigh}`, retries('auto'), '', { atMost: tooHigh - 1 });
}

export const adaptiveConcurrency: Section = {
  id: 'adaptive',
  title: 'Adaptive concurrency against a server of capacity 8',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_ADAPTIVE_ROWS', 200_000, 400_000);
    const sim = await ctx.simulator(['--capacity', '8', '--latency-ms', '50', '--retry-after-seconds', '1']);
    const input = await ctx.input(rows, 'csv');
    report.note(
      `${rows.toLocaleString('en-US')} rows, batch 100, simulator --capacity 8 --latency-ms 50 --retry-after-seconds 1; rows/s over the scoring phase; --concurrency ${TOO_HIGH} with --retries ${TOO_HIGH_RETRIES}`,
    );
    const runs = new Map<string, ScoreResult>();
    for (const setting of SETTINGS) {
      const r = await scoreRun(ctx, {
        label: `concurrency ${setting}`,
        input,
        rows,
        serviceUrl: sim.url,
        flags: ['--batch-size', '100', '--concurrency', setting, ...(setting === TOO_HIGH ? ['--retries', String(TOO_HIGH_RETRIES)] : [])],
      });
      runs.set(setting, r);
      report.raw.push(rawScore(r));
      report.figure(`--concurrency ${setting}: rows/s`, scoringRate(rows, r.facts), 'rows/s');
      report.figure(`--concurrency ${setting}: retries (429s)`, r.facts.retries);
    }
    report.figure('auto: settled concurrency', runs.get('auto')!.facts.concurrencySettled);
    judgeAuto(
      report,
      '',
      (s) => scoringRate(rows, runs.get(s)!.facts),
      (s) => runs.get(s)!.facts.retries,
    );

    if (!(await ctx.redisAnswers())) return report.note(`queue runs skipped: no Redis answers at ${REDIS_URL}`);
    report.note(`then queued, ${WORKERS} workers of --max-in-flight ${WORKER_SLOTS}, segments of 10,000 rows; rows/s from the enqueue call to completion`);
    const queued = new Map<string, QueueRunResult>();
    for (const setting of SETTINGS) {
      const r = await queueRun({
        workers: WORKERS,
        workerFlags: ['--max-in-flight', String(WORKER_SLOTS)],
        serviceUrl: sim.url,
        input,
        out: ctx.runsDir,
        options: { batchSize: 100, segmentRows: 10_000, concurrency: setting === 'auto' ? 'auto' : Number(setting) },
      });
      queued.set(setting, r);
      report.raw.push({ ...r, rows, setting });
      report.figure(`${WORKERS} workers, run --concurrency ${setting}: rows/s`, rows / r.seconds, 'rows/s');
      report.figure(`${WORKERS} workers, run --concurrency ${setting}: retries (429s)`, r.facts.retries);
    }
    report.figure(`${WORKERS} workers, auto: settled slots of a worker (at most its 4; segments' median)`, queued.get('auto')!.facts.concurrencySettled);
    judgeAuto(
      report,
      `${WORKERS} workers, `,
      (s) => rows / queued.get(s)!.seconds,
      (s) => queued.get(s)!.facts.retries,
    );
  },
};
