import type { Command } from 'commander';
import { loadSettings } from '../config/index.js';
import { compareRuns, type RunComparison, runFiles } from '../scoring/index.js';
import { parseLocation } from '../storage/index.js';
import { action } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { runIdArgument } from './run-id-argument.js';

/** Differing rows a target's table shows (the result keeps ROWS_SHOWN). */
const ROWS_PRINTED = 5;

interface CompareFlags {
  out: string;
  outB?: string;
  json?: boolean;
  write?: string;
}

/** `compare`: two finished runs side by side, row by row when they scored the same input, else by their profiles. */
export function registerCompare(program: Command): void {
  program
    .command('compare')
    .description(
      "compare two runs that succeeded: of the same input, their outputs row by row (agreement, differences, the rows that differ most, as shadow scoring's comparison.json); of different inputs, run B's prediction profile against run A's (drift per column)",
    )
    .argument('<runA>', 'the run compared with (its model is `model`, its profile the baseline)', runIdArgument)
    .argument('<runB>', 'the run compared (its model is `other`)', runIdArgument)
    .requiredOption('--out <prefix>', 'the output folder or prefix the runs wrote into (<out>/<runId>/)')
    .option('--out-b <prefix>', 'where run B wrote instead (default: --out)')
    .option('--json', 'print the whole comparison as JSON')
    .option('--write <file>', 'also write the whole comparison as JSON to this file (a path or s3:// URL)')
    .action(
      action(async (runA: string, runB: string, flags: CompareFlags) => {
        const settings = loadSettings();
        const storage = deploymentStorage(settings);
        try {
          const a = runFiles.folder(flags.out, runA);
          const b = runFiles.folder(flags.outB ?? flags.out, runB);
          const result = await compareRuns(storage, a, b, undefined, settings.limits);
          const json = JSON.stringify(result, null, 2);
          if (flags.write !== undefined) await storage.write(parseLocation(flags.write), `${json}\n`);
          process.stdout.write(`${flags.json ? json : formatComparison(result)}\n`);
        } finally {
          storage.close();
        }
      }),
    );
}

/** For people: what was compared, then a table per target (rows) or per column (profile). */
function formatComparison(result: RunComparison): string {
  const { a, b } = result.runs;
  const title = `run A ${a.runId} (${a.model}) and run B ${b.runId} (${b.model})`;
  if (result.mode === 'profile') {
    const { drift } = result;
    const lines = [
      `${title}: ${result.why}; their prediction profiles compared (PSI past ${drift.thresholds.warn} is a move)`,
      table(
        ['column', 'of', 'psi', 'js distance', 'level'],
        drift.columns.map((c) => [c.column, c.of, c.psi.toFixed(4), c.jsDistance.toFixed(4), c.level]),
      ),
    ];
    for (const s of drift.skipped) lines.push(`not compared: ${s.column} (${s.why})`);
    return lines.join('\n');
  }
  const lines = [`${title}: the same input, compared row by row`];
  lines.push(
    table(
      ['target', 'compared', 'agreement', 'mean |difference|'],
      result.targets.map((t) => [
        t.target,
        String(t.compared),
        t.agreement === null ? '-' : `${(t.agreement * 100).toFixed(2)}%`,
        typeof t.meanAbsDifference === 'number' ? String(round(t.meanAbsDifference)) : '-',
      ]),
    ),
  );
  for (const t of result.targets) {
    if (t.rows.length === 0) continue;
    lines.push('', `${t.target}: the rows that differ most`);
    lines.push(
      table(
        ['row', 'A', 'B', 'difference', 'input'],
        t.rows
          .slice(0, ROWS_PRINTED)
          .map((r) => [
            String(r.row),
            JSON.stringify(r.main),
            JSON.stringify(r.other),
            r.difference === undefined ? '-' : `${r.difference > 0 ? '+' : ''}${round(r.difference)}`,
            r.input,
          ]),
      ),
    );
  }
  return lines.join('\n');
}

/** Six significant digits: enough to read, not the double's seventeen. */
function round(value: number): number {
  return Number(value.toPrecision(6));
}

/** Columns padded to their widest cell; the last one left as it is. */
function table(head: string[], rows: string[][]): string {
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  return all.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n');
}
