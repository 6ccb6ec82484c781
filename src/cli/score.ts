import type { Command } from 'commander';
import { loadSettings } from '../config/settings.js';
import { BatchScorerError } from '../errors.js';
import { createLogger } from '../log.js';
import type { Manifest } from '../pipeline/manifest.js';
import { scoreRun } from '../pipeline/score-run.js';
import { createStorage } from '../storage/storage.js';
import { action, interruptSignal } from './action.js';
import { createProgressBar } from './progress-bar.js';
import { addRunFlags, runOptionsFromFlags } from './run-flags.js';

export function registerScore(program: Command): void {
  addRunFlags(
    program
      .command('score')
      .description('score a file in this process (no Redis needed) into <out>/<runId>/')
      .argument('<input>', 'input file: a local path, file:///path or s3://bucket/key (.csv or .jsonl, optionally .gz)'),
  )
    .option('--json', 'print one JSON summary line on stdout')
    .action(
      action(async (input: string, flags: Record<string, unknown>) => {
        const settings = loadSettings();
        const options = runOptionsFromFlags(flags, settings);
        const bar = createProgressBar(!flags.json);
        // A bar and JSON log lines on one terminal garble each other: below warnings, logs wait for the end.
        const log = createLogger({ level: process.stderr.isTTY && !flags.json && !process.env.LOG_LEVEL ? 'warn' : settings.logLevel });
        const storage = createStorage(settings.s3);
        const { signal, dispose } = interruptSignal();
        try {
          const manifest = await scoreRun(
            { input, out: String(flags.out), model: String(flags.model), options },
            {
              storage,
              log,
              token: settings.serviceToken,
              signal,
              onProgress: bar.update,
            },
          );
          bar.stop();
          printSummary(manifest, Boolean(flags.json));
        } catch (err) {
          bar.stop();
          if (flags.json) {
            const e = err as BatchScorerError;
            process.stdout.write(`${JSON.stringify({ state: 'failed', error: { code: e.code ?? 'E_INTERNAL', message: e.message } })}\n`);
          }
          throw err;
        } finally {
          dispose();
          storage.close();
        }
      }),
    );
}

function printSummary(manifest: Manifest, json: boolean): void {
  const folder = manifest.folder ?? '';
  const c = manifest.counts!;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ runId: manifest.runId, state: manifest.state, folder, rowsIn: c.rowsIn, rowsScored: c.rowsScored, rowsQuarantined: c.rowsQuarantined, durationMs: manifest.durationMs, outputs: manifest.outputs })}\n`,
    );
    return;
  }
  process.stdout.write(
    `run ${manifest.runId} ${manifest.state}: ${c.rowsScored} rows scored, ${c.rowsQuarantined} quarantined, in ${(manifest.durationMs / 1000).toFixed(1)} s\n`,
  );
  for (const w of manifest.warnings) process.stdout.write(`warning: ${w}\n`);
  process.stdout.write(`run folder: ${folder}\n`);
}
