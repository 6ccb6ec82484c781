/**
 * One measured `batch-scorer score` run: wall time, CPU and peak RSS of the scorer process, and
 * the figures of its manifest (the run folder is deleted once read).
 */
import type { BenchContext } from './context.js';
import { cliCommand, MODEL } from './cli.js';
import type { InputFormat } from './inputs.js';
import { measure, type Measured } from './measure.js';
import { takeRunFolder, type RunFacts } from './run-folder.js';

export interface ScoreResult extends Omit<Measured, 'stdout'> {
  label: string;
  rows: number;
  facts: RunFacts;
}

let runs = 0;

/**
 * Scores `input` (`rows` rows) with these extra flags; throws unless `scored` rows (default: every
 * row) were scored.
 */
export async function scoreRun(
  ctx: BenchContext,
  p: { label: string; input: string; rows: number; scored?: number; serviceUrl: string; flags?: string[]; inspect?: (folder: string) => Promise<void> },
): Promise<ScoreResult> {
  const runId = `bench-${process.pid}-${++runs}`;
  const command = cliCommand(
    'score',
    p.input,
    '--model',
    MODEL,
    '--out',
    ctx.runsDir,
    '--service',
    p.serviceUrl,
    '--run-id',
    runId,
    '--json',
    ...(p.flags ?? []),
  );
  const { stdout, ...measured } = await measure(command, { LOG_LEVEL: 'warn' });
  const facts = await takeRunFolder(ctx.runsDir, runId, p.inspect);
  const summary = JSON.parse(stdout) as { rowsScored?: number };
  const scored = p.scored ?? p.rows;
  if (summary.rowsScored !== scored || facts.rowsScored !== scored)
    throw new Error(`${p.label}: scored ${summary.rowsScored} of ${p.rows} rows, ${scored} expected`);
  return { label: p.label, rows: p.rows, ...measured, facts };
}

/**
 * `score` with its default options against the simulator without latency: the memory, growth and
 * gzip sections' run of a size, scored once and shared by them.
 */
export async function defaultScore(ctx: BenchContext, format: InputFormat, rows: number): Promise<ScoreResult> {
  return ctx.memo(`default score ${format} ${rows}`, async () => {
    const sim = await ctx.simulator();
    return scoreRun(ctx, { label: `${format} ${rows}`, input: await ctx.input(rows, format), rows, serviceUrl: sim.url });
  });
}

/** The raw figures of a score run for results.json. */
export function rawScore(r: ScoreResult): Record<string, unknown> {
  return { ...r, wallSeconds: round(r.wallSeconds), cpuSeconds: round(r.cpuSeconds) };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
