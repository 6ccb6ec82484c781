import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { loadSettings, type Settings } from '../config/index.js';
import { errorMessage, UsageError } from '../errors.js';
import { lineageListener } from '../lineage/index.js';
import { createLogger, type Logger } from '../log.js';
import { allListeners, type JudgedRun, judgeRun, type Manifest, runFiles, type Verdict } from '../scoring/index.js';
import { formatLocation } from '../storage/index.js';
import { action } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { runIdArgument } from './run-id-argument.js';
import { directWebhooks } from './webhooks.js';

/** What each verdict's command says it does. */
const DESCRIPTIONS: Record<Verdict, string> = {
  accept:
    'accept a run held by its drift gate (state held, E_DRIFT): its manifest says succeeded, keeping the error under accepted with who, when and why, and _SUCCESS is written; a run accepted before is left as it is',
  reject: 'reject a run held by its drift gate: its manifest says failed for good, under rejected with who, when and why; no _SUCCESS is written',
};

/** `accept` and `reject`: judge a run held by its drift gate (see judgeRun). */
export function registerJudge(program: Command, verdict: Verdict): void {
  program
    .command(verdict)
    .description(DESCRIPTIONS[verdict])
    .argument('<runId>', 'the run', runIdArgument)
    .requiredOption('--out <prefix>', 'the output folder or prefix the run wrote into (<out>/<runId>/)')
    .option('--by <name>', 'who judges it, kept in the manifest (default: the OS user name)')
    .option('--why <reason>', 'why, kept in the manifest (at most 1000 characters)')
    .option('--json', `print {"runId","folder","already","${verdict === 'accept' ? 'accepted' : 'rejected'}"} as JSON`)
    .action(
      action(async (runId: string, flags: { out: string; by?: string; why?: string; json?: boolean }) => {
        const by = flags.by ?? userInfo().username;
        if (by.trim() === '') throw new UsageError(`${verdict}: --by must name someone`);
        const settings = loadSettings();
        const storage = deploymentStorage(settings);
        const folder = runFiles.folder(flags.out, runId);
        const log = createLogger({ level: settings.logLevel });
        try {
          const result = await judgeRun(storage, folder, { verdict, by, ...(flags.why !== undefined && { why: flags.why }) });
          if (!result.already) await tellJudged(settings, storage, result.manifest, log);
          const record = verdict === 'accept' ? result.manifest.accepted : result.manifest.rejected;
          const shown = { runId, folder: formatLocation(folder), already: result.already, [verdict === 'accept' ? 'accepted' : 'rejected']: record };
          process.stdout.write(`${flags.json ? JSON.stringify(shown) : formatJudged(runId, verdict, result)}\n`);
        } finally {
          storage.close();
        }
      }),
    );
}

/**
 * Tells the world a held run was judged, as a run's end is told: its webhooks and lineage, and the
 * queue, where the run's state is kept for `status`, the API and the pages (when the run was
 * queued; a run scored by `score` has no job, and a Redis that does not answer is said once: the
 * manifest, written already, is the record).
 */
async function tellJudged(settings: Settings, storage: ReturnType<typeof deploymentStorage>, manifest: Manifest, log: Logger): Promise<void> {
  const lineage = lineageListener(settings.lineage, log);
  const webhooks = directWebhooks(settings, storage, log);
  allListeners([lineage, ...(webhooks ? [webhooks.listener] : [])], log).runEnded(manifest);
  const { RunQueue } = await import('../queue/index.js');
  const queue = new RunQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
  try {
    await queue.judged(manifest);
  } catch (err) {
    process.stderr.write(`the queue was not told (${errorMessage(err)}): status and the API read the run folder's manifest, which says ${manifest.state}\n`);
  } finally {
    await queue.close();
  }
  await Promise.all([lineage.drain(), webhooks?.settled()]);
}

/** One line for people: what was judged, by whom and when. */
function formatJudged(runId: string, verdict: Verdict, { manifest, already }: JudgedRun): string {
  const record = (verdict === 'accept' ? manifest.accepted : manifest.rejected)!;
  const done = verdict === 'accept' ? 'accepted' : 'rejected';
  if (already) return `run ${runId} was ${done} already, by ${record.by} at ${record.at}`;
  const outcome = verdict === 'accept' ? 'succeeded, _SUCCESS written' : 'failed for good, no _SUCCESS';
  return `run ${runId} ${done} by ${record.by} at ${record.at}: ${outcome} (it was held on ${record.error.code})`;
}
