import type { Command } from 'commander';
import { checkInputOptions, loadSettings, parseRunInput, parseRunOptions } from '../config/index.js';
import { segmentBoundCheck } from '../app/index.js';
import { createLogger } from '../log.js';
import { action } from './action.js';
import { deploymentStorage } from './deployment-storage.js';
import { createProgressBar } from './progress-bar.js';
import { addRunFlags, INPUT_ARGUMENT, runOptionsInputFromFlags } from './run-flags.js';
import { resumeCommand } from './resume-command.js';
import { formatRunStatus, resumable } from './run-status-view.js';

export function registerEnqueue(program: Command): void {
  addRunFlags(
    program
      .command('enqueue')
      .description('put a run on the queue (REDIS_URL) and print its run id; --wait follows it')
      .argument('<input>', `${INPUT_ARGUMENT} (local paths must be seen by the workers)`),
    'enqueue',
  )
    .option('--wait', 'follow the run with a progress bar, saying each failed attempt, and exit 0/1 with its result (1, E_RUN_LOST, if it vanishes from Redis)')
    .option('--json', 'print JSON lines instead of text')
    .action(
      action(async (input: string, flags: Record<string, unknown>) => {
        const settings = loadSettings();
        // Validated here, naming flags as typed, before anything reaches Redis; what is not set is the worker's to default.
        const options = runOptionsInputFromFlags(flags, settings);
        checkInputOptions(parseRunInput(input), parseRunOptions(options, 'enqueue', 'flags'), 'flags');
        // Refused here, not by a worker, when the input makes too many segments (counted within a dry run's bounds).
        const storage = deploymentStorage(settings);
        await segmentBoundCheck(
          storage,
          settings.limits,
          {},
          createLogger({ level: settings.logLevel }),
        )({
          input,
          model: String(flags.model),
          out: String(flags.out),
          options,
        }).finally(() => storage.close());
        // bullmq loads only for the commands that use it.
        const [{ RunQueue }, { followRun }, { shownLogs }] = await Promise.all([
          import('../queue/index.js'),
          import('./run-follow.js'),
          import('./job-log-lines.js'),
        ]);
        const queue = new RunQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
        try {
          const { runId, created, resumed } = await queue.enqueue({
            input,
            model: String(flags.model),
            out: String(flags.out),
            options,
            trigger: { kind: 'cli', command: 'enqueue' },
          });
          if (flags.json) process.stdout.write(`${JSON.stringify({ runId, created, ...(resumed ? { resumed } : {}) })}\n`);
          else process.stdout.write(`${runId}\n`);
          if (!created) process.stderr.write(`run ${runId} is already on the queue; not enqueued again\n`);
          if (resumed) process.stderr.write(`run ${runId} had failed or was cancelled; enqueued again, keeping the segments it finished\n`);
          if (!flags.wait) return;
          const bar = await createProgressBar(!flags.json);
          // A failed, cancelled or vanished run is enqueued again under its id to resume, keeping the segments it finished.
          const again = resumeCommand(process.argv.slice(2), runId);
          const status = await followRun(queue, runId, {
            everyMs: 500,
            enqueuedBy: again,
            show: ({ progress }, logs) => {
              // Failed attempts as they happen, each on a line of its own (JSON lines on stdout with --json).
              for (const line of shownLogs(runId, logs, { json: Boolean(flags.json), milestones: false })) {
                if (flags.json) process.stdout.write(`${line}\n`);
                else bar.say(line);
              }
              if (progress) bar.update(progress);
            },
          }).finally(() => bar.stop());
          const resume = resumable(status) ? again : undefined;
          if (flags.json) process.stdout.write(`${JSON.stringify({ ...status, ...(resume ? { resume } : {}) })}\n`);
          else process.stderr.write(`${formatRunStatus(status)}\n`);
          if (status.state !== 'succeeded') process.exitCode = 1;
        } finally {
          await queue.close();
        }
      }),
    );
}
