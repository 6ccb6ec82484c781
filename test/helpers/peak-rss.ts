import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCli, type CliResult } from './cli.js';

const PRELOAD = fileURLToPath(new URL('./report-peak-rss.mjs', import.meta.url));

/** A CLI run's result with the process's peak RSS in MiB, as the kernel counted it (getrusage), not sampled. */
export interface MeasuredCliResult extends CliResult {
  peakRssMiB: number;
}

/**
 * Runs the built CLI to its end as a real child process and reads its peak RSS, which the child
 * writes itself as it exits (see report-peak-rss.mjs), so no rise between two samples is missed.
 */
export async function runCliMeasured(args: string[], env: Record<string, string | undefined> = {}): Promise<MeasuredCliResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'peak-rss-'));
  const file = path.join(dir, 'kib');
  try {
    const nodeOptions = [process.env.NODE_OPTIONS, `--import=${PRELOAD}`].filter(Boolean).join(' ');
    const cli = startCli(args, { ...env, NODE_OPTIONS: nodeOptions, PEAK_RSS_FILE: file });
    const code = await cli.exited;
    return { code, stdout: cli.stdout(), stderr: cli.stderr(), peakRssMiB: Number(readFileSync(file, 'utf8')) / 1024 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
