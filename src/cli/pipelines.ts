import type { Command } from 'commander';
import { loadSettings, targetOrigin } from '../config/index.js';
import { loadPipelines, type Pipeline } from '../triggers/index.js';
import { action } from './action.js';

/** `--jobs <dir>`, shared by the commands that read `jobs/*.yaml`. */
export const JOBS_FLAG = ['--jobs <dir>', 'folder of pipeline declarations, *.yaml (env JOBS_DIR; default ./jobs)'] as const;

export function registerPipelines(program: Command): void {
  program
    .command('pipelines')
    .description('declared pipelines (jobs/*.yaml)')
    .command('check')
    .description('validate jobs/*.yaml and list its pipelines; exit 2 naming each problem (for CI of the repository that holds them)')
    .option(...JOBS_FLAG)
    .option('--json', 'print the pipelines as JSON')
    .action(
      action(async (flags: { jobs?: string; json?: boolean }) => {
        const dir = flags.jobs ?? loadSettings().jobsDir;
        const pipelines = await loadPipelines(dir);
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(pipelines.map(withoutTargetTokens), null, 2)}\n`);
          return;
        }
        for (const p of pipelines) process.stdout.write(`${describePipeline(p)}\n`);
        process.stderr.write(`${pipelines.length} pipeline(s) in ${dir}: valid\n`);
      }),
    );
}

/** A pipeline as printed: its webhook targets as their origins, whose paths and queries may hold a token (a Slack URL's path is one). */
function withoutTargetTokens(p: Pipeline): Pipeline {
  return p.notify ? { ...p, notify: { ...p.notify, urls: p.notify.urls.map(targetOrigin) } } : p;
}

/** One line per pipeline: name, what starts it, model, input and output. */
function describePipeline(p: Pipeline): string {
  const start = p.kind === 'schedule' ? `schedule "${p.schedule.cron}" ${p.schedule.tz}  input ${p.input}` : `files ${p.trigger.prefix}*${p.trigger.suffix}`;
  return `${p.name}  ${start}  model ${p.model}  output ${p.output}`;
}
