/**
 * 1. CPU-bound: the simulator answers at once, so rows per CPU-second of the scorer process is
 * what is left to compare. `score` against the hand-written streaming scorer (the yardstick a user
 * would write instead) on the same file, with the same batch size and concurrency, alternating so
 * that a slower moment of the shared machine does not fall on one side only; and the parse floor,
 * papaparse alone, for what reading the CSV costs at least. Last, what the prediction and input
 * profile of the same rows costs, timed alone (see profile-cost.ts), as a share of score's CPU.
 */
import { rm } from 'node:fs/promises';
import { countLines, csvLineCount } from '../inputs.js';
import { measure, median, type Measured } from '../measure.js';
import type { Section } from '../report.js';
import { profileCpuSeconds } from '../profile-cost.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const BATCH = 1000;
const CONCURRENCY = 4;
/** score's default --segment-rows: where each segment's profile is stored. */
const SEGMENT_ROWS = 20_000;

export const cpuBound: Section = {
  id: 'cpu',
  title: 'CPU-bound: score vs the hand-written scorer',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_CPU_ROWS', 500_000);
    const repeats = Number(process.env.BENCH_CPU_RUNS ?? (ctx.full ? 5 : 3));
    const sim = await ctx.simulator();
    const input = await ctx.input(rows, 'csv');
    const expectedLines = csvLineCount(rows);
    const scores: ScoreResult[] = [];
    const hand: Measured[] = [];
    const floor: Measured[] = [];
    for (let i = 0; i < repeats; i++) {
      const flags = ['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCY)];
      scores.push(await scoreRun(ctx, { label: `score ${i + 1}`, input, rows, serviceUrl: sim.url, flags }));
      const out = `${ctx.runsDir}/hand-written.csv`;
      hand.push(await measure([process.execPath, 'bench/hand-written-scorer.mjs', input, out, sim.url, String(BATCH), String(CONCURRENCY)]));
      const lines = await countLines(out);
      await rm(out);
      if (lines !== expectedLines) throw new Error(`hand-written scorer wrote ${lines} lines, ${expectedLines} expected`);
      const parsed = await measure([process.execPath, 'bench/parse-floor.mjs', input]);
      if (Number(parsed.stdout) !== rows) throw new Error(`parse floor counted ${parsed.stdout.trim()} rows of ${rows}`);
      floor.push(parsed);
    }
    for (const s of scores)
      ctx.connections.push({
        run: `cpu-bound ${s.label}`,
        concurrency: CONCURRENCY,
        requests: s.facts.requests,
        serviceConnections: s.facts.serviceConnections,
      });
    report.raw.push({ rows, repeats, score: scores.map(rawScore), handWritten: hand.map(strip), parseFloor: floor.map(strip) });

    const perCpu = (runs: { cpuSeconds: number }[]) => median(runs.map((r) => rows / r.cpuSeconds));
    const [scoreRate, handRate, floorRate] = [perCpu(scores), perCpu(hand), perCpu(floor)];
    report.note(`${rows.toLocaleString('en-US')} rows, batch ${BATCH}, concurrency ${CONCURRENCY}, median of ${repeats} runs each, alternating`);
    report.figure('score: rows per CPU-second', scoreRate, 'rows/CPU-s');
    report.figure('hand-written: rows per CPU-second', handRate, 'rows/CPU-s');
    report.figure('score / hand-written (rows per CPU-second)', scoreRate / handRate, 'x', { atLeast: 1.5 });
    report.figure('parse floor (papaparse only): rows per CPU-second', floorRate, 'rows/CPU-s');
    report.figure('score / parse floor (rows per CPU-second)', scoreRate / floorRate, 'x');
    report.figure('score: wall time', median(scores.map((r) => r.wallSeconds)), 's');
    report.figure('hand-written: wall time', median(hand.map((r) => r.wallSeconds)), 's');
    report.figure('score: peak RSS', median(scores.map((r) => r.peakRssMiB)), 'MiB');
    report.figure('hand-written: peak RSS', median(hand.map((r) => r.peakRssMiB)), 'MiB');
    // The profile of the same rows (predictions and input columns), timed alone in this process.
    const profile = median(Array.from({ length: repeats }, () => profileCpuSeconds(rows, SEGMENT_ROWS)));
    report.figure('prediction and input profile: CPU', profile, 's');
    report.figure("profile: share of score's CPU", (profile / median(scores.map((r) => r.cpuSeconds))) * 100, '%', { atMost: 10 });
  },
};

function strip({ stdout: _stdout, ...m }: Measured): Omit<Measured, 'stdout'> {
  return m;
}
