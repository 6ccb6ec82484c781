import type { Command } from 'commander';
import { checkRun } from '../config/deployment-policy.js';
import { loadSettings, type Settings } from '../config/settings.js';
import { errorCode, errorMessage, type ErrorCode } from '../errors.js';
import { createLogger } from '../log.js';
import { dryRun, type DryRunReport } from '../pipeline/dry-run.js';
import { NOT_THIS_RUNS, REFUSED_BEFORE_START } from '../pipeline/finish-run.js';
import type { Manifest } from '../pipeline/manifest.js';
import { newRunId } from '../pipeline/prepare-run.js';
import type { RunRequest } from '../pipeline/run-request.js';
import { runFiles } from '../pipeline/prepared-run.js';
import { scoreRun } from '../pipeline/score-run.js';
import { formatLocation } from '../storage/location.js';
import { action, interruptSignal, reportError, type FailedRun } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { createProgressBar } from './progress-bar.js';
import { resumeCommand } from './resume-command.js';
import { addRunFlags, INPUT_ARGUMENT, runOptionsFromFlags } from './run-flags.js';

export function registerScore(program: Command): void {
  addRunFlags(program.command('score').description('score a file in this process (no Redis needed) into <out>/<runId>/').argument('<input>', INPUT_ARGUMENT))
    .option('--json', 'print one JSON summary line on stdout')
    .option(
      '--dry-run',
      'plan the input, check its columns and score one canary batch; print rows, files, segments, requests and an estimated duration; write nothing',
    )
    .action(
      action(async (input: string, flags: Record<string, unknown>) => {
        const settings = loadSettings();
        const options = runOptionsFromFlags(flags, settings, 'score');
        const json = Boolean(flags.json);
        if (flags.dryRun) {
          await dryRunCommand({ input, out: String(flags.out), model: String(flags.model), options }, settings, json);
          return;
        }
        // Chosen here rather than by the run, so that a failure can name the run and how to resume it.
        const runId = options.runId ?? newRunId();
        const request: RunRequest = {
          input,
          out: String(flags.out),
          model: String(flags.model),
          options: { ...options, runId },
          trigger: { kind: 'cli', command: 'score' },
        };
        const storage = deploymentStorage(settings);
        const interrupt = interruptSignal();
        let run: FailedRun | undefined;
        try {
          // With a deployment policy set (INPUT_ROOTS, ...), `score` keeps to it as workers do.
          await checkRun(settings.policy, { input, out: request.out, service: options.service });
          run = { runId, folder: formatLocation(runFiles.folder(request.out, runId)), resume: resumeCommand(process.argv.slice(2), runId) };
          const bar = createProgressBar(!json);
          // A bar and JSON log lines on one terminal garble each other: below warnings, logs wait for the end.
          const log = createLogger({ level: process.stderr.isTTY && !json && !process.env.LOG_LEVEL ? 'warn' : settings.logLevel });
          let manifest: Manifest;
          try {
            manifest = await scoreRun(request, { storage, log, tokens: settings.serviceTokens, signal: interrupt.signal, onProgress: bar.update });
          } finally {
            bar.stop();
          }
          printSummary(manifest, json);
        } catch (caught) {
          // Whatever a signal cancelled first fails the run; the signal is the reason to give.
          const err = interrupt.signal.aborted && isCode(caught, 'E_ABORTED') ? (interrupt.signal.reason as Error) : caught;
          const failed = NOT_RESUMABLE.some((code) => isCode(err, code)) ? undefined : run;
          if (json) printFailure(err, failed);
          reportError(err, failed);
          process.exitCode = interrupt.exitCode() ?? process.exitCode;
        } finally {
          interrupt.dispose();
          storage.close();
        }
      }),
    );
}

/** `score --dry-run`: the plan and the canary batch, printed; nothing is written. */
async function dryRunCommand(request: RunRequest, settings: Settings, json: boolean): Promise<void> {
  const storage = deploymentStorage(settings);
  const interrupt = interruptSignal();
  try {
    await checkRun(settings.policy, { input: request.input, out: request.out, service: request.options.service });
    const report = await dryRun(request, {
      storage,
      log: createLogger({ level: settings.logLevel }),
      tokens: settings.serviceTokens,
      signal: interrupt.signal,
    });
    process.stdout.write(json ? `${JSON.stringify({ dryRun: true, ...report })}\n` : formatDryRun(report));
  } catch (err) {
    if (json) printFailure(err, undefined);
    reportError(err, undefined);
    process.exitCode = interrupt.exitCode() ?? process.exitCode;
  } finally {
    interrupt.dispose();
    storage.close();
  }
}

/** A dry run's report for people. */
function formatDryRun(r: DryRunReport): string {
  const files = r.files.length === 1 ? '1 file' : `${r.files.length} files`;
  return [
    `dry run of ${r.input}: nothing was written`,
    `input: ${files}, ${r.rows} rows, ${r.segments} segments`,
    `requests: ${r.requests}`,
    `canary: ${r.canary.rows} rows in ${r.canary.ms} ms (${r.canary.scored} scored, ${r.canary.quarantined} quarantined)`,
    `estimated duration: ${r.estimatedSeconds} s at concurrency ${r.concurrency}`,
    `model: ${r.model.requested}${r.model.resolvedVersion === null ? '' : ` (version ${r.model.resolvedVersion})`}`,
    `outputs: ${r.outputs.join(', ')}`,
    `columns: ${r.columns.join(', ')}`,
    ...r.warnings.map((w) => `warning: ${w}`),
    '',
  ].join('\n');
}

/** Failures with no run to resume: a request refused before it started, or a run folder not this run's. */
const NOT_RESUMABLE: readonly ErrorCode[] = [...REFUSED_BEFORE_START, ...NOT_THIS_RUNS];

function isCode(err: unknown, code: ErrorCode): boolean {
  return errorCode(err) === code;
}

/** The `--json` line of a failure; a run that had started is named with its folder and resume command. */
function printFailure(err: unknown, run: FailedRun | undefined): void {
  const error = { code: errorCode(err), message: errorMessage(err) };
  const line = run ? { runId: run.runId, state: 'failed', folder: run.folder, error, resume: run.resume } : { state: 'failed', error };
  process.stdout.write(`${JSON.stringify(line)}\n`);
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
