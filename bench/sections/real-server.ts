/**
 * Real server: `score` against a real MindsDB (26.0.1 from the project's own virtual environment,
 * the real-server suite's BYOM model) beside the simulator, so users see what to expect from a
 * real deployment. The same file at batch 1000 and a rising --concurrency, to find the server's
 * best; at that concurrency, the simulator's figures on the same file. CPU is counted on both
 * sides, the scorer's process (bash's `times`) and the server's process group (/proc), so the
 * table says where the time goes: client or server.
 */
import { readFile, readdir } from 'node:fs/promises';
import { startMindsdb } from '../../test/mindsdb/mindsdb-server.js';
import { trainModels } from '../../test/mindsdb/models.js';
import type { Section } from '../report.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';

const BATCH = 1000;
const CONCURRENCIES = [1, 2, 4, 8, 16];

export const realServer: Section = {
  id: 'real-server',
  title: 'Real server: MindsDB beside the simulator',
  async run(ctx, report) {
    const rows = ctx.rows('BENCH_REAL_ROWS', 100_000);
    const repeats = Number(process.env.BENCH_REAL_RUNS ?? 3);
    const input = await ctx.input(rows, 'csv');
    const server = await startMindsdb();
    const sweep: { concurrency: number; run: ScoreResult; serverCpu: number }[] = [];
    try {
      await trainModels(server);
      // MindsDB starts its predict worker processes as requests first need them: a run at the
      // highest concurrency first, not counted, so no measured run pays for their start.
      const warmUp = ['--batch-size', String(BATCH), '--concurrency', String(CONCURRENCIES.at(-1))];
      await scoreRun(ctx, { label: 'mindsdb warm-up', input, rows, serviceUrl: server.url, flags: warmUp });
      // Rounds over the concurrencies, so that a slower moment of the machine does not fall on one only.
      for (let round = 1; round <= repeats; round++) {
        for (const concurrency of CONCURRENCIES) {
          const before = await groupCpuSeconds(server.pid);
          const flags = ['--batch-size', String(BATCH), '--concurrency', String(concurrency)];
          const run = await scoreRun(ctx, { label: `mindsdb concurrency ${concurrency} ${round}`, input, rows, serviceUrl: server.url, flags });
          sweep.push({ concurrency, run, serverCpu: (await groupCpuSeconds(server.pid)) - before });
        }
      }
    } finally {
      await server.close();
    }
    // Per concurrency, its median run by rows/s; the best concurrency is the one whose median is highest.
    const medians = CONCURRENCIES.map((concurrency) => medianRun(sweep.filter((s) => s.concurrency === concurrency)));
    const best = medians.reduce((a, b) => (b.run.wallSeconds < a.run.wallSeconds ? b : a));
    const sim = await ctx.simulator();
    const flags = ['--batch-size', String(BATCH), '--concurrency', String(best.concurrency)];
    const simRun = await scoreRun(ctx, { label: `simulator concurrency ${best.concurrency}`, input, rows, serviceUrl: sim.url, flags });
    report.raw.push({
      rows,
      batch: BATCH,
      sweep: sweep.map((s) => ({ concurrency: s.concurrency, serverCpuSeconds: s.serverCpu, ...rawScore(s.run) })),
      simulator: rawScore(simRun),
    });

    report.note(
      `${rows.toLocaleString('en-US')} rows of the bench's rentals CSV, batch ${BATCH}; MindsDB 26.0.1 on this machine (its HTTP API and BYOM model in 'inhouse' mode, test/mindsdb/), sharing the 2 cores with the scorer; concurrency ${CONCURRENCIES.join(', ')} in ${repeats} alternating rounds after a warm-up run, each figure its concurrency's median run by rows/s`,
    );
    for (const s of medians) report.figure(`MindsDB, concurrency ${s.concurrency}: rows/s (wall)`, rows / s.run.wallSeconds, 'rows/s');
    report.figure('MindsDB: best concurrency', best.concurrency, '');
    report.figure('MindsDB at its best: rows/s (wall)', rows / best.run.wallSeconds, 'rows/s');
    report.figure('MindsDB at its best: scorer rows per CPU-second', rows / best.run.cpuSeconds, 'rows/CPU-s');
    report.figure('MindsDB at its best: server CPU-seconds per 100k rows', (best.serverCpu / rows) * 100_000, 's');
    report.figure("MindsDB at its best: scorer's share of all CPU", (best.run.cpuSeconds / (best.run.cpuSeconds + best.serverCpu)) * 100, '%');
    report.figure('MindsDB at its best: scorer peak RSS', best.run.peakRssMiB, 'MiB');
    report.figure(`simulator (median of ${repeats}), concurrency ${best.concurrency}: rows/s (wall)`, rows / simRun.wallSeconds, 'rows/s');
    report.figure(`simulator, concurrency ${best.concurrency}: scorer rows per CPU-second`, rows / simRun.cpuSeconds, 'rows/CPU-s');
    report.figure('MindsDB / simulator: rows/s', rows / best.run.wallSeconds / (rows / simRun.wallSeconds), 'x');
  },
};

/** The median of runs by wall time (the lower middle one of an even count). */
function medianRun<T extends { run: ScoreResult }>(runs: T[]): T {
  const sorted = [...runs].sort((a, b) => a.run.wallSeconds - b.run.wallSeconds);
  return sorted[(sorted.length - 1) >> 1];
}

/** CPU-seconds (user + system, with reaped children's) of every process in a process group, from /proc. */
async function groupCpuSeconds(pgid: number): Promise<number> {
  const ticksPerSecond = 100;
  let ticks = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) !== pgid) continue;
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return ticks / ticksPerSecond;
}
