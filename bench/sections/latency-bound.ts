/**
 * 2. Latency-bound: every predict answer takes 100 ms, so the best a scorer can do is keep its
 * `concurrency` requests in flight all the time: concurrency × batch / latency rows per second.
 * The share of that ideal over the scoring phase shows gaps between requests; over the whole
 * process, what planning, assembly and start-up add. A run's share moves by about a point from run
 * to run on a shared machine, so the figures are the median run's (by its share), of three.
 */
import type { Section } from '../report.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const LATENCY_MS = 100;
const BATCH = 100;
const CONCURRENCY = 16;

export const latencyBound: Section = {
  id: 'latency',
  title: 'Latency-bound: share of the ideal rate',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_LATENCY_ROWS', 160_000);
    const sim = await ctx.simulator(['--latency-ms', String(LATENCY_MS)]);
    const repeats = Number(process.env.BENCH_LATENCY_RUNS ?? 3);
    const flags = ['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCY)];
    const input = await ctx.input(rows, 'csv');
    const ideal = (CONCURRENCY * BATCH) / (LATENCY_MS / 1000);
    const runs: ScoreResult[] = [];
    for (let i = 0; i < repeats; i++) runs.push(await scoreRun(ctx, { label: `latency-bound ${i + 1}`, input, rows, serviceUrl: sim.url, flags }));
    const scoringRate = (r: ScoreResult) => (r.facts.scoreMs === null ? 0 : rows / (r.facts.scoreMs / 1000));
    const sorted = [...runs].sort((a, b) => scoringRate(a) - scoringRate(b));
    const r = sorted[(sorted.length - 1) >> 1];
    ctx.connections.push({ run: 'latency-bound', concurrency: CONCURRENCY, requests: r.facts.requests, serviceConnections: r.facts.serviceConnections });
    report.raw.push({ runs: runs.map(rawScore), median: r.label });

    const { scoreMs, planMs, assembleMs, durationMs } = r.facts;
    report.note(
      `${rows.toLocaleString('en-US')} rows, latency ${LATENCY_MS} ms, batch ${BATCH}, concurrency ${CONCURRENCY}: ideal ${ideal.toLocaleString('en-US')} rows/s; median of ${repeats} runs (by share), the runs at ${runs.map((x) => `${((scoringRate(x) / ideal) * 100).toFixed(1)}%`).join(', ')}`,
    );
    report.figure('rows/s over the scoring phase (timings.scoreMs)', scoreMs === null ? null : scoringRate(r), 'rows/s');
    report.figure('scoring phase: share of ideal', scoreMs === null ? null : (scoringRate(r) / ideal) * 100, '%', { atLeast: 95 });
    report.figure('rows/s over the whole process (wall)', rows / r.wallSeconds, 'rows/s');
    report.figure('whole process: share of ideal', (rows / r.wallSeconds / ideal) * 100, '%');
    report.figure('planning (timings.planMs)', planMs, 'ms');
    report.figure('assembly (timings.assembleMs)', assembleMs, 'ms');
    report.figure('process start-up and exit (wall − durationMs)', r.wallSeconds * 1000 - durationMs, 'ms');
  },
};
