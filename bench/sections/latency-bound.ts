/**
 * 2. Latency-bound: every predict answer takes 100 ms, so the best a scorer can do is keep its
 * `concurrency` requests in flight all the time: concurrency × batch / latency rows per second.
 * 480,000 rows make an ideal run of 30 s, the size of file the tool is for. The targets are that
 * share of the ideal over the whole process, from the command's start to its exit (start-up,
 * describe, planning, assembly and exit all count), and over the scoring phase alone, which shows
 * the gaps between requests; and the time from the command's start to its first segment's first
 * request (describe and the one-row probe included). A run's share moves by about a point from run to
 * run on a shared machine, so the figures are the median run's (by its whole-process share), of
 * three. Planning goes on while the first segments are scored, so the time from the command's
 * start to its first segment's requests should not grow with the file: a run of ten times the rows
 * (batch 1000, to keep it short) shows it.
 */
import type { Section } from '../report.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const LATENCY_MS = 100;
const BATCH = 100;
const CONCURRENCY = 16;
/** The larger file's batch: ten times the rows in about the same time. */
const LARGE_BATCH = 1000;

export const latencyBound: Section = {
  id: 'latency',
  title: 'Latency-bound: share of the ideal rate',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_LATENCY_ROWS', 480_000);
    const sim = await ctx.simulator(['--latency-ms', String(LATENCY_MS)]);
    const repeats = Number(process.env.BENCH_LATENCY_RUNS ?? 3);
    const flags = ['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCY)];
    const input = await ctx.input(rows, 'csv');
    const ideal = (CONCURRENCY * BATCH) / (LATENCY_MS / 1000);
    const runs: ScoreResult[] = [];
    for (let i = 0; i < repeats; i++) runs.push(await scoreRun(ctx, { label: `latency-bound ${i + 1}`, input, rows, serviceUrl: sim.url, flags }));
    const wholeShare = (r: ScoreResult) => (rows / r.wallSeconds / ideal) * 100;
    const scoringRate = (r: ScoreResult) => (r.facts.scoreMs === null ? 0 : rows / (r.facts.scoreMs / 1000));
    const sorted = [...runs].sort((a, b) => wholeShare(a) - wholeShare(b));
    const r = sorted[(sorted.length - 1) >> 1];
    const large = rows * 10;
    const big = await scoreRun(ctx, {
      label: `latency-bound ${large} rows`,
      input: await ctx.input(large, 'csv'),
      rows: large,
      serviceUrl: sim.url,
      flags: ['--batch-size', String(LARGE_BATCH), '--concurrency', String(CONCURRENCY)],
    });
    ctx.connections.push({ run: 'latency-bound', concurrency: CONCURRENCY, requests: r.facts.requests, serviceConnections: r.facts.serviceConnections });
    report.raw.push({ runs: runs.map(rawScore), median: r.label, large: rawScore(big) });

    const { scoreMs, planMs, assembleMs, durationMs } = r.facts;
    report.note(
      `${rows.toLocaleString('en-US')} rows, latency ${LATENCY_MS} ms, batch ${BATCH}, concurrency ${CONCURRENCY}: ideal ${ideal.toLocaleString('en-US')} rows/s; median of ${repeats} runs (by whole-process share), the runs at ${runs.map((x) => `${wholeShare(x).toFixed(1)}%`).join(', ')}; the first-request times of ${large.toLocaleString('en-US')} rows are of one run at batch ${LARGE_BATCH}`,
    );
    report.figure('rows/s over the whole process (wall)', rows / r.wallSeconds, 'rows/s');
    report.figure('whole process: share of ideal', wholeShare(r), '%', { atLeast: 95 });
    report.figure('rows/s over the scoring phase (timings.scoreMs)', scoreMs === null ? null : scoringRate(r), 'rows/s');
    report.figure('scoring phase: share of ideal', scoreMs === null ? null : (scoringRate(r) / ideal) * 100, '%', { atLeast: 97 });
    const small = firstRequestMs(r);
    const grown = firstRequestMs(big);
    report.figure(`time to first segment request, ${rows.toLocaleString('en-US')} rows (command start → timings.planMs)`, small, 'ms', { atMost: 400 });
    report.figure(`time to first segment request, ${large.toLocaleString('en-US')} rows`, grown, 'ms');
    report.figure('time to first segment request: 10x rows / 1x', small && grown ? grown / small : null, 'x', { atMost: 1.5 });
    report.figure(`planning ended, ${large.toLocaleString('en-US')} rows (timings.planEndMs)`, big.facts.planEndMs, 'ms');
    report.figure('start-up (command start → the run began)', r.facts.startedAt === null ? null : r.facts.startedAt - r.commandStartedAt, 'ms');
    report.figure('describe, probe and first segment (timings.planMs)', planMs, 'ms');
    report.figure('planning ended (timings.planEndMs)', r.facts.planEndMs, 'ms');
    report.figure('assembly (timings.assembleMs)', assembleMs, 'ms');
    report.figure('process start-up and exit (wall − durationMs)', r.wallSeconds * 1000 - durationMs, 'ms');
  },
};

/** From the command's start to its first segment's scoring (the manifest's startedAt + planMs), or null without timings. */
function firstRequestMs(r: ScoreResult): number | null {
  return r.facts.startedAt === null || r.facts.planMs === null ? null : r.facts.startedAt + r.facts.planMs - r.commandStartedAt;
}
