/**
 * 9. Dirty data: the same rows clean, and with one row in 40 given a field too many (malformed:
 * quarantined, never sent), against a model that takes 100 ms per request. A malformed row should
 * cost its line in errors.jsonl, not a request: when it ended the batch it was read in, batches of
 * 1000 rows went out as 39 and the dirty file took 25 times the requests and the time of the clean
 * one. Requests are the manifests' counts.requests; rows/s is rows read (scored or quarantined)
 * over the scoring phase; medians of alternating runs.
 */
import { writeDirtyCsv } from '../inputs.js';
import { median } from '../measure.js';
import type { Section } from '../report.js';
import { scoringRate } from '../run-folder.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

/** The dirty file has one malformed row in this many. */
const EVERY = 40;
const [LATENCY_MS, BATCH, CONCURRENCY] = [100, 1000, 4];
// 1 in 40 is past the default allowance of 1%.
const FLAGS = ['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCY), '--max-error-rate', '0.05'];

export const dirtyData: Section = {
  id: 'dirty',
  title: 'Dirty data: one malformed row in 40',
  async run(ctx, report) {
    const sim = await ctx.simulator(['--latency-ms', String(LATENCY_MS)]);
    const rows = ctx.rows('BENCH_DIRTY_ROWS', 20_000);
    const clean = await ctx.input(rows, 'csv');
    const dirty = `${ctx.inputsDir}/rentals-${rows}-dirty.csv`;
    const malformed = await writeDirtyCsv(dirty, rows, EVERY);
    const repeats = Number(process.env.BENCH_DIRTY_RUNS ?? 3);
    const cleanRuns: ScoreResult[] = [];
    const dirtyRuns: ScoreResult[] = [];
    for (let i = 0; i < repeats; i++) {
      cleanRuns.push(await scoreRun(ctx, { label: `clean ${i + 1}`, input: clean, rows, serviceUrl: sim.url, flags: FLAGS }));
      dirtyRuns.push(await scoreRun(ctx, { label: `dirty ${i + 1}`, input: dirty, rows, scored: rows - malformed, serviceUrl: sim.url, flags: FLAGS }));
    }
    report.raw.push(...cleanRuns.map(rawScore), ...dirtyRuns.map(rawScore));
    report.note(
      `${rows.toLocaleString('en-US')} rows (${malformed.toLocaleString('en-US')} malformed), latency ${LATENCY_MS} ms, batch ${BATCH}, concurrency ${CONCURRENCY}; median of ${repeats} alternating runs each`,
    );
    const requests = (runs: ScoreResult[]) => median(runs.map((r) => r.facts.requests));
    const rate = (runs: ScoreResult[]) => median(runs.map((r) => scoringRate(rows, r.facts)));
    report.figure('requests, clean', requests(cleanRuns));
    report.figure('requests, dirty', requests(dirtyRuns));
    report.figure('requests, dirty / clean', requests(dirtyRuns) / requests(cleanRuns), 'x', { atLeast: 0.9, atMost: 1.1 });
    report.figure('rows/s over the scoring phase, clean', rate(cleanRuns), 'rows/s');
    report.figure('rows/s over the scoring phase, dirty', rate(dirtyRuns), 'rows/s');
    report.figure('rows/s, dirty / clean', rate(dirtyRuns) / rate(cleanRuns), 'x');
    // CPU rather than time alone: the machine is shared, and a quarantined row should cost no more than a scored one.
    report.figure('CPU (user + sys), clean', median(cleanRuns.map((r) => r.cpuSeconds)), 's');
    report.figure('CPU (user + sys), dirty', median(dirtyRuns.map((r) => r.cpuSeconds)), 's');
  },
};
