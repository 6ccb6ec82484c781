import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { loadSettings } from '../config/settings.js';
import { UsageError } from '../errors.js';
import { acceptRun, type AcceptedRun } from '../pipeline/accept-run.js';
import { runFiles } from '../pipeline/prepared-run.js';
import { formatLocation } from '../storage/location.js';
import { action } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { runIdArgument } from './run-id-argument.js';

/** `accept`: let a run that failed on its drift (E_DRIFT) succeed, its change judged expected. */
export function registerAccept(program: Command): void {
  program
    .command('accept')
    .description(
      'accept a run that failed on its drift (E_DRIFT): its manifest says succeeded, keeping the error under accepted with who and when, and _SUCCESS is written; a run accepted before is left as it is',
    )
    .argument('<runId>', 'the run', runIdArgument)
    .requiredOption('--out <prefix>', 'the output folder or prefix the run wrote into (<out>/<runId>/)')
    .option('--by <name>', 'who accepts it, kept in the manifest (default: the OS user name)')
    .option('--json', 'print {"runId","folder","already","accepted"} as JSON')
    .action(
      action(async (runId: string, flags: { out: string; by?: string; json?: boolean }) => {
        const by = flags.by ?? userInfo().username;
        if (by.trim() === '') throw new UsageError('accept: --by must name someone');
        const settings = loadSettings();
        const storage = deploymentStorage(settings);
        const folder = runFiles.folder(flags.out, runId);
        try {
          const result = await acceptRun(storage, folder, by);
          const shown = { runId, folder: formatLocation(folder), already: result.already, accepted: result.manifest.accepted };
          process.stdout.write(`${flags.json ? JSON.stringify(shown) : formatAccepted(runId, result)}\n`);
        } finally {
          storage.close();
        }
      }),
    );
}

/** One line for people: what was accepted, by whom and when. */
function formatAccepted(runId: string, { manifest, already }: AcceptedRun): string {
  const { by, at } = manifest.accepted;
  return already
    ? `run ${runId} was accepted already, by ${by} at ${at}`
    : `run ${runId} accepted by ${by} at ${at}: succeeded, _SUCCESS written (it had failed with ${manifest.accepted.error.code})`;
}
