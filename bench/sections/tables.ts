/**
 * Tables: a PostgreSQL table in and out against the same rows as CSV in and out (issue 36). A
 * table of the rentals rows (bench/rentals-table.ts: an integer primary key, numeric, text, double,
 * boolean and date columns with NULLs) in a schema of its own (dropped at the end), and the same
 * rows exported with COPY TO as CSV, which the CSV runs score.
 *
 * Direct `score` against the simulator without latency (CPU-bound), default options: CSV in and
 * out, table in and out, table in and CSV out, CSV in and table out; alternating, median of
 * BENCH_TABLE_RUNS (3) runs each: wall rows/s, CPU seconds and peak RSS of the scorer process.
 *
 * Queue mode, three `worker` processes, the same run options: CSV in and out, then table in and
 * out with one worker SIGKILLed once a quarter of the segments are done and another started (the
 * run carries on in the others, or is resumed when it ends failed). The out-table must hold one row
 * per input row, each with the values of the CSV run's predictions.csv (every field of every row
 * compared). Peak RSS of each worker process, the largest of each run, and their ratio (target:
 * the table run within 10% of the CSV run); the workers' CPU from the enqueue to the run's end
 * (the killed worker's to its end, its replacement's from its start, segments scored twice in).
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { setTimeout } from 'node:timers/promises';
import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { REDIS_URL, type BenchContext } from '../context.js';
import { median } from '../measure.js';
import { queueRun, type QueueRunResult, type RunningQueueRun } from '../queue-run.js';
import { connectBenchDatabase, DATABASE_URL, loadRentalsTable, serverVersion } from '../rentals-table.js';
import type { Section, SectionReport } from '../report.js';
import { takeRunFolder } from '../run-folder.js';
import { rawScore, scoreRun, type ScoreResult } from '../score-run.js';
import { compareCsv, csvHeader, exportTable, keyCounts } from '../table-check.js';

const MEMORY_TARGET = 1.1;
/** A killed worker's segments go back to the queue after this long (the workers' --lock-duration). */
const LOCK_MS = 10_000;
const WORKERS = 3;
/** score's default --segment-rows: the queue runs' segments. */
const SEGMENT_ROWS = 20_000;

/** Where the rows are: the table, the CSV export of it, and a connection to make and check tables. */
interface Setup {
  client: pg.Client;
  schema: string;
  table: string;
  csv: string;
  rows: number;
}

type End = 'CSV' | 'table';
const KINDS: [End, End][] = [
  ['CSV', 'CSV'],
  ['table', 'table'],
  ['table', 'CSV'],
  ['CSV', 'table'],
];

export const tables: Section = {
  id: 'tables',
  // Run when named (BENCH_SECTIONS=tables): table input and output against CSV take about ten minutes of their own.
  onlyWhenNamed: true,
  title: 'Tables: PostgreSQL in and out against CSV',
  async run(ctx, report) {
    if (!(await ctx.redisAnswers())) return report.note(`skipped: no Redis answers at ${REDIS_URL}`);
    const client = await connectBenchDatabase();
    if (!client) return report.note(`skipped: no PostgreSQL answers at ${DATABASE_URL} (set DATABASE_URL)`);
    const rows = ctx.rows('BENCH_TABLE_ROWS', 1_000_000);
    const schema = `bench_tables_${process.pid}`;
    const setup: Setup = { client, schema, table: `${schema}.rentals`, csv: `${ctx.inputsDir}/tables-export-${rows}.csv`, rows };
    const source = `${ctx.inputsDir}/tables-source-${rows}.csv`;
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
      await loadRentalsTable(client, setup.table, rows, source);
      await rm(source);
      await pipeline(
        client.query(copyStreams.to(`COPY (SELECT * FROM ${setup.table} ORDER BY id) TO STDOUT (FORMAT csv, HEADER)`)),
        createWriteStream(setup.csv),
      );
      report.note(
        `${rows.toLocaleString('en-US')} rows in a table of a schema of its own (integer primary key id), PostgreSQL ${await serverVersion(client)} on ${new URL(DATABASE_URL).host}; the CSV runs score the same rows exported with COPY TO`,
      );
      await direct(ctx, report, setup);
      await queued(ctx, report, setup);
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await client.end();
      await rm(source, { force: true });
      await rm(setup.csv, { force: true });
    }
  },
};

/** The flags of a run reading from `from` and writing to `to`, its out-table `out`. */
function runArgs(setup: Setup, from: End, to: End, out: string): { input: string; flags: string[] } {
  const flags = from === 'table' ? ['--table', setup.table] : [];
  if (to === 'table') flags.push('--out-table', out, ...(from === 'CSV' ? ['--out-database', DATABASE_URL] : []));
  return { input: from === 'table' ? DATABASE_URL : setup.csv, flags };
}

/** Direct `score` runs of each kind, alternating, with default options against the simulator without latency. */
async function direct(ctx: BenchContext, report: SectionReport, setup: Setup): Promise<void> {
  const repeats = Number(process.env.BENCH_TABLE_RUNS ?? 3);
  const sim = await ctx.simulator();
  const taken = new Map<string, ScoreResult[]>();
  let made = 0;
  for (let i = 0; i < repeats; i++) {
    for (const [from, to] of KINDS) {
      const label = `${from} in, ${to} out`;
      const out = `${setup.schema}.direct_${++made}`;
      const { input, flags } = runArgs(setup, from, to, out);
      const r = await scoreRun(ctx, { label: `${label} (${i + 1})`, input, rows: setup.rows, serviceUrl: sim.url, flags });
      if (to === 'table') {
        const counts = await keyCounts(setup.client, out, 'id');
        if (counts.rows !== setup.rows || counts.keys !== setup.rows)
          throw new Error(`${label}: ${out} holds ${counts.rows} rows of ${counts.keys} ids, ${setup.rows} expected`);
        await setup.client.query(`DROP TABLE ${out}`);
      }
      taken.set(label, [...(taken.get(label) ?? []), r]);
      report.raw.push({ kind: label, ...rawScore(r) });
    }
  }
  report.note(
    `direct score: latency 0, default options, median of ${repeats} alternating runs of each kind; CPU and peak RSS of the scorer process (the server's share of reading and COPY is not in it)`,
  );
  const csvRuns = taken.get('CSV in, CSV out')!;
  const [csvCpu, csvPeak] = [median(csvRuns.map((r) => r.cpuSeconds)), median(csvRuns.map((r) => r.peakRssMiB))];
  for (const [label, rs] of taken) {
    const cpu = median(rs.map((r) => r.cpuSeconds));
    const peak = median(rs.map((r) => r.peakRssMiB));
    report.figure(`direct, ${label}: rows/s`, setup.rows / median(rs.map((r) => r.wallSeconds)), 'rows/s');
    report.figure(`direct, ${label}: CPU`, cpu, 's');
    report.figure(`direct, ${label}: peak RSS`, peak, 'MiB');
    if (label === 'CSV in, CSV out') continue;
    report.figure(`direct, ${label}: CPU / CSV in and out`, cpu / csvCpu, 'x');
    report.figure(`direct, ${label}: peak RSS / CSV in and out`, peak / csvPeak, 'x', { atMost: MEMORY_TARGET });
  }
}

/** The queue runs: CSV in and out, then table in and out with a worker killed; the table checked against the CSV run's predictions. */
async function queued(ctx: BenchContext, report: SectionReport, setup: Setup): Promise<void> {
  const sim = await ctx.simulator();
  const workerFlags = ['--lock-duration', String(LOCK_MS)];
  const segments = Math.ceil(setup.rows / SEGMENT_ROWS);
  const predictions = `${ctx.inputsDir}/tables-queue-predictions.csv`;
  const exported = `${ctx.inputsDir}/tables-queue-table.csv`;
  const outTable = `${setup.schema}.scored`;
  try {
    const keep = async (folder: string) => rename(`${folder}/predictions.csv`, predictions);
    const base = { workers: WORKERS, workerFlags, serviceUrl: sim.url, out: ctx.runsDir };
    const csv = await queueRun({ ...base, input: setup.csv, options: {}, readFacts: (id) => takeRunFolder(ctx.runsDir, id, keep) });
    let killed = '';
    const kill = async (run: RunningQueueRun) => {
      killed = await killOne(ctx, run, Math.max(1, Math.floor(segments / 4)), segments);
    };
    const table = await queueRun({
      ...base,
      input: DATABASE_URL,
      options: { table: setup.table, outTable },
      during: kill,
      resumeFailed: true,
    });
    report.note(
      `queue: ${WORKERS} worker processes (--lock-duration ${LOCK_MS}), default run options, ${segments} segments; in the table run ${killed}; ${table.resumed ? 'the run ended failed and was resumed' : 'the other workers carried the run on (no resume needed)'}`,
    );
    const counts = await keyCounts(setup.client, outTable, 'id');
    const columns = await csvHeader(predictions);
    await exportTable(setup.client, outTable, columns, 'id', exported);
    const same = await compareCsv(predictions, exported);
    report.raw.push(
      { kind: 'queue, CSV in, CSV out', rows: setup.rows, ...csv },
      { kind: 'queue, table in, table out', rows: setup.rows, ...table, counts, same },
    );
    queueFigures(report, setup.rows, csv, table);
    report.figure(
      'queue, out-table: rows, distinct ids',
      `${counts.rows.toLocaleString('en-US')}, ${counts.keys.toLocaleString('en-US')} of ${setup.rows.toLocaleString('en-US')}`,
    );
    report.figure(
      "queue, out-table values = the CSV run's predictions.csv",
      counts.rows === setup.rows && counts.keys === setup.rows && same.rows === setup.rows && same.differing === 0
        ? `yes: ${same.rows.toLocaleString('en-US')} rows × ${columns.length} columns`
        : `no: ${same.differing} of ${same.rows} rows differ (${same.first ?? 'row count'})`,
    );
  } finally {
    await rm(predictions, { force: true });
    await rm(exported, { force: true });
  }
}

function queueFigures(report: SectionReport, rows: number, csv: QueueRunResult, table: QueueRunResult): void {
  const [csvPeak, tablePeak] = [Math.max(...csv.workerPeakRssMiB), Math.max(...table.workerPeakRssMiB)];
  const cpu = (r: QueueRunResult) => r.workerCpuSeconds.reduce((a, b) => a + b, 0);
  report.figure('queue, CSV in, CSV out: rows/s', rows / csv.seconds, 'rows/s');
  report.figure('queue, table in, table out (a worker killed): rows/s', rows / table.seconds, 'rows/s');
  report.figure('queue, CSV in, CSV out: CPU of the workers', cpu(csv), 's');
  report.figure('queue, table in, table out (a worker killed): CPU of the workers', cpu(table), 's');
  report.figure('queue, CSV in, CSV out: peak RSS of a worker', csvPeak, 'MiB');
  report.figure('queue, table in, table out: peak RSS of a worker', tablePeak, 'MiB');
  report.figure('queue, peak RSS of a worker: table / CSV', tablePeak / csvPeak, 'x', { atMost: MEMORY_TARGET });
  report.figure('queue, peak RSS of each worker: CSV', csv.workerPeakRssMiB.join(', '), 'MiB');
  report.figure('queue, peak RSS of each worker: table (the killed one first, the one started after last)', table.workerPeakRssMiB.join(', '), 'MiB');
}

/**
 * Waits until `after` of the run's segments are done, SIGKILLs the first worker and starts another
 * in its place; says what it did.
 */
async function killOne(ctx: BenchContext, run: RunningQueueRun, after: number, segments: number): Promise<string> {
  const folder = `${ctx.runsDir}/${run.runId}/_work/segments`;
  const done = async () => (await readdir(folder).catch(() => [])).filter((name) => name.endsWith('.done.json')).length;
  for (let seen = await done(); seen < after; seen = await done()) {
    if (run.ended()) throw new Error(`the run ended before ${after} of its segments were done: no worker was killed`);
    await setTimeout(50);
  }
  const victim = run.children[0];
  const seen = await done();
  const exited = victim.exitCode === null && victim.signalCode === null ? once(victim, 'exit') : Promise.resolve();
  victim.kill('SIGKILL');
  await exited;
  await run.addWorker();
  return `a worker was SIGKILLed once ${seen} of ${segments} segments were done, and another started`;
}
