import { isSettled } from '../scoring/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { loadSettings } from '../config/index.js';
import { UsageError } from '../errors.js';
import type { RunStatus } from '../queue/index.js';
import { pipelineNameSchema } from '../triggers/index.js';
import { action } from './action.js';
import { FrameWriter } from './frame-writer.js';
import { formatRunStatus } from './run-status-view.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show a run (or the latest runs): state, rows done/total, rows/s, ETA, failures, output location, what started it')
    .argument('[runId]', 'the run; without it, the 20 latest runs')
    .option('--pipeline <name>', 'only the runs this pipeline of jobs/*.yaml started (without a run id)', pipelineName)
    .option(
      '--watch',
      'refresh every second until the run ends, saying each failed attempt (in place on a terminal; elsewhere a line only when it changed); a run that vanishes from Redis ends it with E_RUN_LOST, exit 1',
    )
    .option('--json', 'print JSON (JSON lines with --watch; log lines as {"runId","log"})')
    .option('--logs', "also print the run's milestones (planned, segments done, assembled); with --watch, each once")
    .action(
      action(async (runId: string | undefined, flags: { watch?: boolean; json?: boolean; logs?: boolean; pipeline?: string }) => {
        if (runId && flags.pipeline) throw new UsageError(`status: --pipeline filters the latest runs; leave it out to show run ${runId}`);
        const settings = loadSettings();
        // bullmq loads only for the commands that use it.
        const [{ RunQueue, runNotFound, againIfDropped }, { followRun }, { shownLogs }] = await Promise.all([
          import('../queue/index.js'),
          import('./run-follow.js'),
          import('./job-log-lines.js'),
        ]);
        const queue = new RunQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
        // JSON lines are appended, never redrawn, even on a terminal.
        const out = new FrameWriter(process.stdout, !flags.json && process.stdout.isTTY === true);
        /** Writes the runs, and above them the lines a run's job logged since the last write (see shownLogs). */
        const show = (runs: RunStatus[], logs: string[] = []) => {
          const frame = flags.json
            ? JSON.stringify(runId ? runs[0] : runs)
            : runs.map(formatRunStatus).join('\n') || `no runs${flags.pipeline ? ` of pipeline ${flags.pipeline}` : ''}`;
          out.write(frame, runId ? shownLogs(runId, logs, { json: Boolean(flags.json), milestones: Boolean(flags.logs) }) : []);
        };
        try {
          if (runId && flags.watch) {
            await followRun(queue, runId, { everyMs: 1_000, show: (run, logs) => show([run], logs) });
            return;
          }
          for (;;) {
            const shown = await againIfDropped(async () => {
              const runs = runId ? [await queue.get(runId)] : await queue.list({ pipeline: flags.pipeline });
              if (runId && !runs[0]) throw runNotFound(runId);
              const found = runs.filter((r) => r !== undefined);
              show(found, flags.logs && runId ? await queue.logs(runId) : []);
              return found;
            });
            if (!flags.watch || shown.every((r) => isSettled(r.state))) break;
            await sleep(1_000);
          }
        } finally {
          await queue.close();
        }
      }),
    );
}

/** `--pipeline`: a name as `jobs/*.yaml` allows it, so a typo is told apart from a pipeline with no runs. */
function pipelineName(value: string): string {
  const parsed = pipelineNameSchema.safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(`--pipeline: ${parsed.error.issues[0].message}, got "${value}"`);
  return parsed.data;
}
