import { Option, type Command } from 'commander';
import { checkInput, checkOutput, checkService, loadSettings, type RunOptionsInput } from '../config/index.js';
import { errorCode, errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';
import { type Manifest, rescoreRun, runFiles } from '../scoring/index.js';
import { formatLocation, parseLocation } from '../storage/index.js';
import { serviceClientFactory } from '../app/index.js';
import { action, reportError, type FailedRun } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { interruptSignal } from './graceful-exit.js';
import { count } from './number-flags.js';
import { runIdArgument } from './run-id-argument.js';

interface RescoreFlags {
  out: string;
  rows?: string;
  runId?: string;
  service?: string;
  onModelChange?: 'fail' | 'warn';
  concurrency?: number | 'auto';
  json?: boolean;
}

/** `rescore`: a finished run's quarantined rows sent again, into a new version of its outputs (see rescoreRun). */
export function registerRescore(program: Command): void {
  program
    .command('rescore')
    .description(
      "send again the rows a finished run quarantined, as they were (the model was fixed) or as corrected in a copy of its errors.jsonl (--rows), and write a new version of the run's outputs into <out>/<new run id>/: the rows scored now at their places in input order, as if the run had scored them the first time (added to its table in one publish, for a run that wrote into one), errors.jsonl of the rows still quarantined, and a manifest naming the run patched (patches). Exit 0 once the version is written, rows still quarantined or not (see --json)",
    )
    .argument('<runId>', 'the run to patch: one that succeeded (or was accepted), in <out>/<runId>/', runIdArgument)
    .requiredOption('--out <prefix>', 'the output folder or prefix the run wrote into; the new version goes beside it')
    .option(
      '--rows <file>',
      'a copy of the run\'s errors.jsonl with rows corrected in place (each line\'s "input"); only its lines are sent, and only rows the run quarantined, in its order (default: every row the model refused, as it was)',
    )
    .option('--run-id <id>', "the new version's run id (default: <runId>.rescore-1, -2, ..., the first free)", runIdArgument)
    .option('--service <url>', "the Model Query Service to send the rows to (default: the run's)")
    .addOption(
      new Option('--on-model-change <action>', "on a server without versions, a model changed since the run: fail or warn (default: the run's)").choices([
        'fail',
        'warn',
      ]),
    )
    .option('--concurrency <n|auto>', "predict requests in flight (default: the run's)", (v: string) => (v === 'auto' ? 'auto' : count('--concurrency')(v)))
    .option('--json', 'print one JSON summary line on stdout')
    .action(action(rescoreCommand));
}

async function rescoreCommand(runId: string, flags: RescoreFlags): Promise<void> {
  const settings = loadSettings();
  const storage = deploymentStorage(settings);
  const interrupt = interruptSignal(PROCESS_DEFAULTS.scoreShutdownTimeoutMs);
  // Once the new version has claimed its folder, a failure is recorded there and names it.
  let claimed: FailedRun | undefined;
  try {
    // With a deployment policy set (INPUT_ROOTS, ...), `rescore` keeps to it as `score` does.
    if (flags.service !== undefined) checkService(settings.policy, flags.service);
    if (flags.rows !== undefined) await checkInput(settings.policy, parseLocation(flags.rows));
    await checkOutput(settings.policy, parseLocation(flags.out));
    const manifest = await rescoreRun(
      {
        runId,
        out: flags.out,
        ...(flags.rows !== undefined && { rows: flags.rows }),
        ...(flags.runId !== undefined && { newRunId: flags.runId }),
        options: optionsFromFlags(flags),
      },
      {
        storage,
        log: createLogger({ level: settings.logLevel }),
        predictorFor: serviceClientFactory(settings.serviceTokens, settings.limits),
        limits: settings.limits,
        policy: settings.policy,
        signal: interrupt.signal,
        onClaimed: (id) => (claimed = { runId: id, folder: formatLocation(runFiles.folder(flags.out, id)) }),
      },
    );
    process.stdout.write(flags.json ? `${JSON.stringify(summary(manifest))}\n` : formatRescored(manifest));
  } catch (err) {
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ ...(claimed && { runId: claimed.runId, folder: claimed.folder }), state: 'failed', error: { code: errorCode(err), message: errorMessage(err) } })}\n`,
      );
    reportError(err, claimed);
    process.exitCode = interrupt.exitCode() ?? process.exitCode;
  } finally {
    interrupt.dispose();
    storage.close();
  }
}

/** The options the flags set over the run's; checked with the run's options, a bad one named by its flag. */
function optionsFromFlags(flags: RescoreFlags): Pick<RunOptionsInput, 'service' | 'onModelChange' | 'concurrency'> {
  return {
    ...(flags.service !== undefined && { service: flags.service }),
    ...(flags.onModelChange !== undefined && { onModelChange: flags.onModelChange }),
    ...(flags.concurrency !== undefined && { concurrency: flags.concurrency }),
  };
}

/** The `--json` line: the new version, the run it patched, and where its rows went. */
function summary(manifest: Manifest) {
  const { patches } = manifest;
  const c = manifest.counts!;
  return {
    runId: manifest.runId,
    state: manifest.state,
    folder: manifest.folder,
    patches: patches!.runId,
    rowsSent: patches!.counts.rowsIn,
    rowsScored: patches!.counts.rowsScored,
    rowsQuarantinedAgain: patches!.counts.rowsQuarantined,
    counts: { rowsIn: c.rowsIn, rowsScored: c.rowsScored, rowsQuarantined: c.rowsQuarantined },
    durationMs: manifest.durationMs,
    outputs: manifest.outputs,
    ...(manifest.table && { table: manifest.table }),
  };
}

/** For people: what came home, what is still quarantined, and where the new version is. */
function formatRescored(manifest: Manifest): string {
  const { patches } = manifest;
  const sent = patches!.counts;
  const c = manifest.counts!;
  return [
    `run ${manifest.runId} patched run ${patches!.runId}: ${sent.rowsIn} rows sent again, ${sent.rowsScored} scored, ${sent.rowsQuarantined} quarantined again; ${c.rowsScored} rows scored and ${c.rowsQuarantined} quarantined in all; in ${(manifest.durationMs / 1000).toFixed(1)} s`,
    ...manifest.warnings.map((w) => `warning: ${w}`),
    ...(manifest.table ? [`table: ${manifest.table.rows} rows added to ${manifest.table.table} of ${manifest.table.database}`] : []),
    `run folder: ${manifest.folder ?? ''}`,
    '',
  ].join('\n');
}
