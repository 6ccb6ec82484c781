import { InvalidArgumentError, type Command } from 'commander';
import { loadSettings, RETENTION_AGE_FORMAT, retentionAge, type Settings } from '../config/index.js';
import { BatchScorerError, UsageError } from '../errors.js';
import { ageText, pruneRuns, type PrunedFolder, type PruneQueue, type PruneReport, type PruneRule } from '../retention/index.js';
import { parseLocation } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { loadPipelinesIfPresent } from '../triggers/index.js';
import { action } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { count } from './number-flags.js';
import { JOBS_FLAG } from './pipelines.js';

interface PruneFlags {
  out: string;
  olderThan?: number;
  keep?: number;
  dryRun?: boolean;
  queue: boolean;
  jobs?: string;
  json?: boolean;
}

/** `runs`: the run folders below an output prefix; `runs prune` deletes the finished ones past the retention. */
export function registerRuns(program: Command): void {
  const runs = program.command('runs').description('the run folders below an output prefix, and what Redis keeps of their runs');
  runs
    .command('prune')
    .description(
      "delete the finished run folders batch-scorer made below --out that the retention lets go, with what Redis keeps of their runs (jobs and keys); never a folder it did not make, a run under way or held, or a pipeline's current drift baseline",
    )
    .requiredOption('--out <prefix>', 'the output folder or prefix whose run folders (<out>/<runId>/) are pruned; nothing outside it is touched')
    .option(
      '--older-than <duration>',
      'delete the finished runs that ended longer ago than this: 30d, 12h, 90m (s, m, h, d or w); default RETENTION_OLDER_THAN',
      olderThan,
    )
    .option(
      '--keep <n>',
      'keep the n newest finished runs of each pipeline (the runs no pipeline started counted as one more) whatever their age; default RETENTION_KEEP',
      count('--keep', 0),
    )
    .option('--dry-run', 'say which folders would be deleted and why the others stay; delete nothing')
    .option('--no-queue', 'ask no Redis: for runs scored by `score` alone (a run enqueued again for a resume would not be seen)')
    .option(...JOBS_FLAG)
    .option('--json', 'print the report as JSON: every folder below --out with its action (deleted, would delete, kept, failed), reason and why')
    .action(
      action(async (flags: PruneFlags) => {
        const settings = loadSettings();
        const rule = pruneRule(flags, settings);
        const out = parseLocation(flags.out);
        // The pipelines name baselines of their own; a jobs folder that cannot be read stops the prune (E_CONFIG): a baseline could go unseen.
        const pipelines = (await loadPipelinesIfPresent(flags.jobs ?? settings.jobsDir)) ?? [];
        const namedBaselines = new Set(pipelines.flatMap((p) => (p.options.baselineRun === undefined ? [] : [p.options.baselineRun])));
        const storage = deploymentStorage(settings);
        const queue = flags.queue ? await queueOf(settings) : undefined;
        try {
          const report = await pruneRuns({ storage, out, rule, queue, namedBaselines, dryRun: Boolean(flags.dryRun) });
          if (flags.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
          else for (const f of report.folders) process.stdout.write(`${folderLine(f)}\n`);
          process.stderr.write(`${summary(report)}\n`);
          if (report.failed > 0) {
            throw new BatchScorerError('E_STORAGE', `${report.failed} run folder(s) could not be deleted (see above); run runs prune again to finish them`);
          }
        } finally {
          storage.close();
          await queue?.close();
        }
      }),
    );
}

/** `--older-than`: a retention age, in ms. */
function olderThan(value: string): number {
  const ms = retentionAge(value);
  if (ms === undefined) throw new InvalidArgumentError(`--older-than ${RETENTION_AGE_FORMAT}, got "${excerpt(value, 64)}"`);
  return ms;
}

/** The flags, else the retention settings; with neither, nothing says which runs go (E_USAGE). */
function pruneRule(flags: PruneFlags, settings: Settings): PruneRule {
  const olderThanMs = flags.olderThan ?? settings.retention.olderThanMs;
  const keep = flags.keep ?? settings.retention.keep;
  if (olderThanMs === undefined && keep === undefined) {
    throw new UsageError('runs prune: nothing says which runs to delete: give --older-than or --keep (or both), or set RETENTION_OLDER_THAN or RETENTION_KEEP');
  }
  return { ...(olderThanMs !== undefined && { olderThanMs }), ...(keep !== undefined && { keep }) };
}

/** The queue as pruning asks it, on a connection of its own. */
async function queueOf(settings: Settings): Promise<PruneQueue & { close(): Promise<void> }> {
  // bullmq loads only for the commands that use it.
  const { RunQueue } = await import('../queue/index.js');
  const queue = new RunQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
  return {
    state: async (runId) => (await queue.get(runId))?.state,
    forget: (runId, pipeline) => queue.forget(runId, pipeline),
    close: () => queue.close(),
  };
}

/** `deleted       20261101T020000Z-ab12cd  succeeded, ended 31d ago (12 files, 40,960 bytes)` */
function folderLine(f: PrunedFolder): string {
  const size = f.action === 'kept' ? '' : ` (${f.files} files, ${f.bytes.toLocaleString('en-US')} bytes)`;
  return `${f.action.padEnd(12)}  ${f.name}  ${f.why}${size}`;
}

/** `deleted 3 run folders (36 files, 12,345 bytes); kept 5: 2 young, 1 baseline, 1 held, 1 foreign` */
function summary(r: PruneReport): string {
  const rule = [
    r.rule.olderThanMs !== undefined && `older than ${ageText(r.rule.olderThanMs)}`,
    r.rule.keep !== undefined && `keeping the ${r.rule.keep} newest`,
  ]
    .filter(Boolean)
    .join(', ');
  const reasons = new Map<string, number>();
  for (const f of r.folders) if (f.action === 'kept') reasons.set(f.reason, (reasons.get(f.reason) ?? 0) + 1);
  const kept = [...reasons].map(([reason, n]) => `${n} ${reason}`).join(', ');
  const { folders, files, bytes } = r.deleted;
  const failed = r.failed > 0 ? `; ${r.failed} failed` : '';
  return `${r.dryRun ? 'would delete' : 'deleted'} ${folders} run folder(s) (${files} files, ${bytes.toLocaleString('en-US')} bytes) of ${r.out} (${rule}); kept ${r.kept}${kept ? `: ${kept}` : ''}${failed}`;
}
