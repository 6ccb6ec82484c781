/**
 * 1. CPU-bound: the simulator answers at once, so rows per CPU-second of the scorer process is
 * what is left to compare. `score` against two hand-written streaming scorers (the yardsticks a
 * user would write instead: one on `fetch`, one on `undici.request` with a keep-alive Agent, the
 * stronger, which the target is set against) on the same file, with the same batch size and
 * concurrency, alternating so that a slower moment of the shared machine does not fall on one side
 * only; and the parse floor,
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
  title: 'CPU-bound: score vs the hand-written scorers',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_CPU_ROWS', 500_000);
    const repeats = Number(process.env.BENCH_CPU_RUNS ?? (ctx.full ? 5 : 3));
    const sim = await ctx.simulator();
    const input = await ctx.input(rows, 'csv');
    const expectedLines = csvLineCount(rows);
    const scores: ScoreResult[] = [];
    const hand: Measured[] = [];
    const undici: Measured[] = [];
    const floor: Measured[] = [];
    for (let i = 0; i < repeats; i++) {
      const flags = ['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCY)];
      scores.push(await scoreRun(ctx, { label: `score ${i + 1}`, input, rows, serviceUrl: sim.url, flags }));
      hand.push(await yardstick(ctx.runsDir, 'bench/hand-written-scorer.mjs', input, sim.url, expectedLines));
      undici.push(await yardstick(ctx.runsDir, 'bench/hand-written-undici.mjs', input, sim.url, expectedLines));
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
    report.raw.push({
      rows,
      repeats,
      score: scores.map(rawScore),
      handWritten: hand.map(strip),
      handWrittenUndici: undici.map(strip),
      parseFloor: floor.map(strip),
    });

    const perCpu = (runs: { cpuSeconds: number }[]) => median(runs.map((r) => rows / r.cpuSeconds));
    const [scoreRate, handRate, undiciRate, floorRate] = [perCpu(scores), perCpu(hand), perCpu(undici), perCpu(floor)];
    report.note(`${rows.toLocaleString('en-US')} rows, batch ${BATCH}, concurrency ${CONCURRENCY}, median of ${repeats} runs each, alternating`);
    report.note("hand-written (fetch): bench/hand-written-scorer.mjs; hand-written (undici): bench/hand-written-undici.mjs, the target's yardstick");
    report.figure('score: rows per CPU-second', scoreRate, 'rows/CPU-s');
    report.figure('hand-written (undici): rows per CPU-second', undiciRate, 'rows/CPU-s');
    report.figure('hand-written (fetch): rows per CPU-second', handRate, 'rows/CPU-s');
    report.figure('score / hand-written (undici)', scoreRate / undiciRate, 'x', { atLeast: 1.5 });
    report.figure('score / hand-written (fetch)', scoreRate / handRate, 'x');
    report.figure('parse floor (papaparse only): rows per CPU-second', floorRate, 'rows/CPU-s');
    report.figure('score / parse floor (rows per CPU-second)', scoreRate / floorRate, 'x');
    report.figure('score: wall time', median(scores.map((r) => r.wallSeconds)), 's');
    report.figure('hand-written (undici): wall time', median(undici.map((r) => r.wallSeconds)), 's');
    report.figure('hand-written (fetch): wall time', median(hand.map((r) => r.wallSeconds)), 's');
    report.figure('score: peak RSS', median(scores.map((r) => r.peakRssMiB)), 'MiB');
    report.figure('hand-written (undici): peak RSS', median(undici.map((r) => r.peakRssMiB)), 'MiB');
    report.figure('hand-written (fetch): peak RSS', median(hand.map((r) => r.peakRssMiB)), 'MiB');
    // The profile of the same rows (predictions and input columns), timed alone in this process.
    const profile = median(Array.from({ length: repeats }, () => profileCpuSeconds(rows, SEGMENT_ROWS)));
    report.figure('prediction and input profile: CPU', profile, 's');
    report.figure("profile: share of score's CPU", (profile / median(scores.map((r) => r.cpuSeconds))) * 100, '%', { atMost: 10 });
  },
};

/** One yardstick run on `input`, its output's lines counted (and deleted) so that a short run cannot pass. */
async function yardstick(runsDir: string, script: string, input: string, serviceUrl: string, expectedLines: number): Promise<Measured> {
  const out = `${runsDir}/yardstick.csv`;
  const measured = await measure([process.execPath, script, input, out, serviceUrl, String(BATCH), String(CONCURRENCY)]);
  const lines = await countLines(out);
  await rm(out);
  if (lines !== expectedLines) throw new Error(`${script} wrote ${lines} lines, ${expectedLines} expected`);
  return measured;
}

function strip({ stdout: _stdout, ...m }: Measured): Omit<Measured, 'stdout'> {
  return m;
}
