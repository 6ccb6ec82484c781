import type { Command } from 'commander';
import { loadSettings, parseRunOptions } from '../config/index.js';
import type { RunQueue } from '../queue/index.js';
import { action } from './action.js';
import { count } from './number-flags.js';
import { formatRunStatus } from './run-status-view.js';

/** `cancel` and `resume`: stop a queued run, and take it up again where it stopped. */
export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description(
      'cancel a waiting or running queued run: its segments stop within seconds on every worker (cancelling until they have, then cancelled); no _SUCCESS, manifest state cancelled',
    )
    .argument('<runId>', 'the run')
    .option('--json', "print the run's status as JSON")
    .action(
      action(async (runId: string, flags: { json?: boolean }) => {
        const status = await withRunQueue((queue) => queue.cancel(runId));
        process.stdout.write(`${flags.json ? JSON.stringify(status) : formatRunStatus(status)}\n`);
        if (status.state === 'cancelling' && !flags.json) {
          process.stderr.write(`its jobs stop within seconds; batch-scorer status ${runId} --watch follows it until it is cancelled\n`);
        }
      }),
    );
  program
    .command('resume')
    .description('enqueue a failed, cancelled or expired queued run again, as it was asked, keeping the segments it finished')
    .argument('<runId>', 'the run')
    .option('--max-requests <n>', "cap: predict calls in all, the run's earlier ones counted (default: none)", count('--max-requests'))
    .option('--max-rows <n>', "cap: rows sent to the model in all, the run's earlier ones counted (default: none)", count('--max-rows'))
    .option('--deadline <duration|time>', 'cap: stop sending at this time: 90s, 30m, 2h from now, or an ISO 8601 time (default: none)')
    .option('--json', 'print {"runId","resumed"} as JSON')
    .action(
      action(async (runId: string, flags: { json?: boolean; maxRequests?: number; maxRows?: number; deadline?: string }) => {
        // A run's caps are the resume's own: those not given are none.
        const { maxRequests, maxRows, deadline } = parseRunOptions(
          { maxRequests: flags.maxRequests, maxRows: flags.maxRows, deadline: flags.deadline },
          'resume',
          'flags',
        );
        const resumed = await withRunQueue((queue) => queue.resume(runId, { maxRequests, maxRows, deadline }));
        process.stdout.write(`${flags.json ? JSON.stringify(resumed) : runId}\n`);
        if (!flags.json) process.stderr.write(`run ${runId} enqueued again, keeping the segments it finished\n`);
      }),
    );
}

/** Runs `fn` with a producer on REDIS_URL, closed after it. */
async function withRunQueue<T>(fn: (queue: RunQueue) => Promise<T>): Promise<T> {
  const settings = loadSettings();
  // bullmq loads only for the commands that use it.
  const { RunQueue } = await import('../queue/index.js');
  const queue = new RunQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
  try {
    return await fn(queue);
  } finally {
    await queue.close();
  }
}
