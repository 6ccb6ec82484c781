/**
 * `npm run bench` (quick sizes) and `npm run bench -- --full`: the benchmark suite of batch-scorer.
 * Every figure is taken in this one run, side by side, against `batch-scorer simulate` in its own
 * process, and printed on one line with its target and PASS/MISS. Results go to
 * .bench/results.json (raw figures) and to BENCHMARKS.md between its bench:results markers.
 * A section that fails is reported as an error in its table and the others still run; the process
 * then exits 1. A missed target is a result, not an error.
 *
 * Sections (bench/sections/): cpu, latency, memory, growth (writes bench/growth.svg), scale-out
 * and the queue half of gzip (need Redis at REDIS_URL, default redis://127.0.0.1:6379; skipped
 * without), adaptive, gzip, connections, dirty, real-server (needs `bash scripts/mindsdb-env.sh`
 * first); with --full also s3 and parquet. Only when BENCH_SECTIONS names them: redis-memory
 * (starts a redis-server of its own; skipped without one), postgres-clients (PostgreSQL at
 * DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/test) and tables (PostgreSQL at
 * DATABASE_URL and Redis; skipped without either).
 *
 * Environment:
 *   BENCH_SCALE=0.02         multiply every row count (at least 1000 rows) for a smoke run; a
 *                            scaled run writes its plot and Markdown into .bench/, not bench/growth.svg
 *                            and BENCHMARKS.md
 *   BENCH_SECTIONS=cpu,gzip  run only these sections (ids above)
 *   BENCH_CPU_ROWS (500000), BENCH_CPU_RUNS (3; 5 with --full), BENCH_LATENCY_ROWS (480000), BENCH_LATENCY_RUNS (3),
 *   BENCH_MEMORY_ROWS (1000000,5000000,10000000), BENCH_GROWTH_ROWS (100000,1000000;
 *   --full adds 10000000), BENCH_SCALEOUT_ROWS (240000; --full 480000), BENCH_ADAPTIVE_ROWS
 *   (200000; --full 400000), BENCH_GZIP_ROWS (1000000; --full adds 10000000), BENCH_DIRTY_ROWS
 *   (20000), BENCH_DIRTY_RUNS (3), BENCH_REDIS_RUNS (1000 runs, not rows, nor scaled), BENCH_REAL_ROWS (100000), BENCH_S3_ROWS and BENCH_PARQUET_ROWS (1000000, --full only),
 *   BENCH_PG_ROWS (1000000), BENCH_PG_RUNS (3), BENCH_TABLE_ROWS (1000000), BENCH_TABLE_RUNS (3):
 *   row counts, before BENCH_SCALE.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { BENCH_DIR, BenchContext } from './context.js';
import { describeMachine } from './machine.js';
import { SectionReport, type Section } from './report.js';
import { writeMarkdownBlock, writeResultsJson, type BenchRun } from './results-file.js';
import { adaptiveConcurrency } from './sections/adaptive-concurrency.js';
import { connections } from './sections/connections.js';
import { cpuBound } from './sections/cpu-bound.js';
import { dirtyData } from './sections/dirty-data.js';
import { growth } from './sections/growth.js';
import { gzip } from './sections/gzip.js';
import { latencyBound } from './sections/latency-bound.js';
import { memory } from './sections/memory.js';
import { parquet } from './sections/parquet.js';
import { postgresClients } from './sections/postgres-clients.js';
import { s3 } from './sections/s3.js';
import { realServer } from './sections/real-server.js';
import { redisMemory } from './sections/redis-memory.js';
import { scaleOut } from './sections/scale-out.js';
import { tables } from './sections/tables.js';

// Memory before growth and gzip: they reuse its runs. Connections after the runs it reads.
const SECTIONS: Section[] = [
  cpuBound,
  latencyBound,
  memory,
  growth,
  scaleOut,
  adaptiveConcurrency,
  gzip,
  connections,
  dirtyData,
  redisMemory,
  realServer,
  s3,
  parquet,
  postgresClients,
  tables,
];

const full = process.argv.includes('--full');
const scale = Number(process.env.BENCH_SCALE ?? 1);
if (!(scale > 0)) throw new Error(`BENCH_SCALE must be a positive number, not ${process.env.BENCH_SCALE}`);
const only = process.env.BENCH_SECTIONS?.split(',').map((s) => s.trim());

// The figures speak for the runtime the product ships on: the `node` devDependency, which `npm run`
// puts first on PATH, runs the bench and (through process.execPath) every command it measures.
const shipped = (JSON.parse(await readFile('package.json', 'utf8')) as { devDependencies: { node: string } }).devDependencies.node;
if (process.versions.node !== shipped)
  throw new Error(`the bench measures Node ${shipped}, the runtime batch-scorer ships on; this is Node ${process.versions.node}: run it as npm run bench`);

const ctx = new BenchContext(full, scale);
const machine = describeMachine();
const run: BenchRun = { mode: full ? 'full' : 'quick', partial: only !== undefined, scale, machine, sections: [] };
console.log(`bench (${run.mode}${scale === 1 ? '' : `, scaled by ${scale}`}) on ${machine.cpu} × ${machine.cores}, Node ${machine.node}`);
await mkdir(BENCH_DIR, { recursive: true });
await ctx.prepare();
try {
  for (const section of SECTIONS) {
    if ((section.fullOnly && !full) || (only ? !only.includes(section.id) : section.onlyWhenNamed)) continue;
    const report = new SectionReport(section.id, section.title);
    run.sections.push(report);
    console.log(`\n== ${section.title}`);
    const started = Date.now();
    try {
      await section.run(ctx, report);
    } catch (e) {
      report.error = e instanceof Error ? e.message : String(e);
      console.error(`[${section.id}] ERROR: ${report.error}`);
    }
    console.log(`[${section.id}] took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
} finally {
  await ctx.close();
}

await writeResultsJson(`${BENCH_DIR}/results.json`, run);
const markdownPath = scale === 1 ? 'BENCHMARKS.md' : `${BENCH_DIR}/BENCHMARKS.md`;
await writeMarkdownBlock(markdownPath, run);
console.log(`\nresults in ${BENCH_DIR}/results.json and ${markdownPath}`);
const errored = run.sections.filter((s) => s.error).map((s) => s.id);
if (errored.length > 0) {
  console.error(`sections with errors: ${errored.join(', ')}`);
  process.exitCode = 1;
}
