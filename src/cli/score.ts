import type { Command } from 'commander';
import { checkRun, loadSettings, outDatabaseOf, parseRunInput, type Settings } from '../config/index.js';
import { envLogLevel, PROCESS_DEFAULTS } from '../process-defaults.js';
import { errorCode, errorMessage, type ErrorCode } from '../errors.js';
import { lineageListener, type LineageListener } from '../lineage/index.js';
import { createLogger } from '../log.js';
import {
  dryRun,
  type DryRunReport,
  NOT_THIS_RUNS,
  type Manifest,
  allListeners,
  describeResult,
  runResult,
  newRunId,
  type RunRequest,
  runFiles,
  resumeCanHelp,
  refusedWhilePlanning,
  scoreRun,
  type RunStage,
  checkSegments,
} from '../scoring/index.js';
import { formatLocation } from '../storage/index.js';
import { action, reportError, type FailedRun } from './action.js';
import { interruptSignal } from './graceful-exit.js';
import { deploymentStorage } from './deployment-storage.js';
import { estimateLines } from './estimate-lines.js';
import { count } from './number-flags.js';
import { createProgressBar } from './progress-bar.js';
import { resumeCommand } from './resume-command.js';
import { addRunFlags, INPUT_ARGUMENT, runOptionsFromFlags } from './run-flags.js';
import { serviceClientFactory } from '../app/index.js';
import { directWebhooks } from './webhooks.js';

export function registerScore(program: Command): void {
  addRunFlags(
    program.command('score').description('score a file in this process (no Redis needed) into <out>/<runId>/').argument('<input>', INPUT_ARGUMENT),
    'score',
  )
    .option('--json', 'print one JSON summary line on stdout')
    .option(
      '--shutdown-timeout <ms>',
      'on SIGTERM or SIGINT, how long the run may take to stop and record its failure before the process exits anyway',
      count('--shutdown-timeout'),
      PROCESS_DEFAULTS.scoreShutdownTimeoutMs,
    )
    .option(
      '--dry-run',
      'plan the input, check its columns and score a few canary batches; print rows, files, segments, and requests, bytes sent and duration as ranges; write nothing',
    )
    .action(
      action(async (input: string, flags: Record<string, unknown>) => {
        const settings = loadSettings();
        const options = runOptionsFromFlags(flags, settings, 'score');
        const json = Boolean(flags.json);
        const shutdownTimeout = Number(flags.shutdownTimeout);
        if (flags.dryRun) {
          await dryRunCommand({ input, out: String(flags.out), model: String(flags.model), options }, settings, json, shutdownTimeout);
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
        const interrupt = interruptSignal(shutdownTimeout);
        // How far the run got: a failure names its folder once it has one, and how to resume where that can help.
        let stage: RunStage | undefined;
        let lineage: LineageListener | undefined;
        let webhooks: ReturnType<typeof directWebhooks>;
        try {
          // With a deployment policy set (INPUT_ROOTS, ...), `score` keeps to it as workers do.
          await checkRun(settings.policy, { input, out: request.out, service: options.service, outDatabase: outDatabaseOf(input, options) });
          // Too many segments for --segment-rows: refused before the run has a folder, when the rows can be counted within the dry-run bounds
          // (a database's rows are counted by planning, which reads its key alone).
          const reads = parseRunInput(input);
          if (reads.kind === 'files') await checkSegments(storage, reads.location, options, settings.limits, interrupt.signal);
          const bar = await createProgressBar(!json);
          // A bar and JSON log lines on one terminal garble each other: below warnings, logs wait for the end.
          const log = createLogger({ level: process.stderr.isTTY && !json && !envLogLevel() ? PROCESS_DEFAULTS.progressBarLogLevel : settings.logLevel });
          lineage = lineageListener(settings.lineage, log);
          webhooks = directWebhooks(settings, storage, log);
          let manifest: Manifest;
          try {
            manifest = await scoreRun(request, {
              storage,
              log,
              predictorFor: serviceClientFactory(settings.serviceTokens, settings.limits),
              limits: settings.limits,
              signal: interrupt.signal,
              onProgress: bar.update,
              onStage: (reached) => (stage = reached),
              listener: allListeners([lineage, ...(webhooks ? [webhooks.listener] : [])], log),
            });
          } finally {
            bar.stop();
          }
          printSummary(manifest, json);
        } catch (caught) {
          // Whatever a signal cancelled first fails the run; the signal is the reason to give.
          const err = interrupt.signal.aborted && isCode(caught, 'E_ABORTED') ? (interrupt.signal.reason as Error) : caught;
          const code = errorCode(err);
          // A run folder found to be another run's, or unreadable, is not this run's to name; nor is
          // one withdrawn by a refusal while planning.
          const failed: FailedRun | undefined =
            stage === undefined || NOT_THIS_RUNS.includes(code) || (stage === 'claimed' && refusedWhilePlanning(code))
              ? undefined
              : {
                  runId,
                  folder: formatLocation(runFiles.folder(request.out, runId)),
                  ...(resumeCanHelp(code, stage === 'planned') && { resume: resumeCommand(process.argv.slice(2), runId, code === 'E_EXPIRED') }),
                };
          if (json) printFailure(err, failed);
          reportError(err, failed);
          process.exitCode = interrupt.exitCode() ?? process.exitCode;
        } finally {
          // After the result is printed, each bounded (LINEAGE_DRAIN_MS, directNotifier): the exit code stays the run's.
          await Promise.all([lineage?.drain(), webhooks?.settled()]);
          interrupt.dispose();
          storage.close();
        }
      }),
    );
}

/** `score --dry-run`: the plan, the canary batches and the estimate, printed; nothing is written. */
async function dryRunCommand(request: RunRequest, settings: Settings, json: boolean, shutdownTimeout: number): Promise<void> {
  const storage = deploymentStorage(settings);
  const interrupt = interruptSignal(shutdownTimeout);
  try {
    await checkRun(settings.policy, { input: request.input, out: request.out, service: request.options.service });
    const report = await dryRun(request, {
      storage,
      log: createLogger({ level: settings.logLevel }),
      predictorFor: serviceClientFactory(settings.serviceTokens, settings.limits),
      limits: settings.limits,
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
  const files = r.files.length === 0 ? 'a database' : r.files.length === 1 ? '1 file' : `${r.files.length} files`;
  return [
    `dry run of ${r.input}: nothing was written`,
    `input: ${files}, ${r.rows} rows, ${r.segments} segments`,
    `canary: ${r.canary.batches} batches, ${r.canary.rows} rows in ${r.canary.ms} ms (${r.canary.scored} scored, ${r.canary.quarantined} quarantined)`,
    ...estimateLines(r.estimate),
    `model: ${r.model.requested}${r.model.resolvedVersion === null ? '' : ` (version ${r.model.resolvedVersion})`}`,
    `outputs: ${r.outputs.join(', ')}`,
    `columns: ${r.columns.join(', ')}`,
    ...r.warnings.map((w) => `warning: ${w}`),
    '',
  ].join('\n');
}

function isCode(err: unknown, code: ErrorCode): boolean {
  return errorCode(err) === code;
}

/** The `--json` line of a failure; a run that had made its folder is named with it, and with its resume command where resuming can help. */
function printFailure(err: unknown, run: FailedRun | undefined): void {
  const error = { code: errorCode(err), message: errorMessage(err) };
  const line = run
    ? {
        runId: run.runId,
        state: error.code === 'E_EXPIRED' ? 'expired' : 'failed',
        folder: run.folder,
        error,
        ...(run.resume !== undefined && { resume: run.resume }),
      }
    : { state: 'failed', error };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function printSummary(manifest: Manifest, json: boolean): void {
  const folder = manifest.folder ?? '';
  const c = manifest.counts!;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ runId: manifest.runId, state: manifest.state, folder, rowsIn: c.rowsIn, rowsScored: c.rowsScored, rowsQuarantined: c.rowsQuarantined, durationMs: manifest.durationMs, outputs: manifest.outputs, ...(manifest.table && { table: manifest.table }), result: runResult(manifest) })}\n`,
    );
    return;
  }
  // The result as status, the run API and webhooks say it (see describeResult).
  process.stdout.write(`run ${manifest.runId} ${describeResult(runResult(manifest))}; in ${(manifest.durationMs / 1000).toFixed(1)} s\n`);
  for (const w of manifest.warnings) process.stdout.write(`warning: ${w}\n`);
  process.stdout.write(`run folder: ${folder}\n`);
  const { table } = manifest;
  if (table) process.stdout.write(`table: ${table.rows} rows published into ${table.table} of ${table.database}\n`);
}
