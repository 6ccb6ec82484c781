import type { Command } from 'commander';
import { loadSettings } from '../config/index.js';
import { listSchedules, loadPipelines, loadScheduleWriters, type ScheduledPipeline, type ScheduleSyncResult, type ScheduleView } from '../triggers/index.js';
import { action } from './action.js';
import { JOBS_FLAG } from './pipelines.js';

export function registerSchedule(program: Command): void {
  const schedule = program.command('schedule').description("the queue's job schedulers for the scheduled pipelines of jobs/*.yaml (REDIS_URL)");
  schedule
    .command('sync')
    .description('make the job schedulers match the scheduled pipelines: add, update, remove; safe to run again, and from several processes at once')
    .option(...JOBS_FLAG)
    .option('--json', 'print what was done to each scheduler as JSON')
    .action(
      action(async (flags: { jobs?: string; json?: boolean }) => {
        const settings = loadSettings();
        const dir = flags.jobs ?? settings.jobsDir;
        // Refused before anything reaches Redis: a bad jobs folder is E_CONFIG, exit 2.
        const scheduled = (await loadPipelines(dir)).filter((p): p is ScheduledPipeline => p.kind === 'schedule');
        // bullmq loads only for the commands that use it.
        const { OwnConnectionQueue, SCHEDULES_QUEUE } = await import('../queue/index.js');
        const { syncSchedules } = await loadScheduleWriters();
        const schedules = new OwnConnectionQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix }, SCHEDULES_QUEUE);
        try {
          const results = await syncSchedules(await schedules.ready(), scheduled);
          if (flags.json) process.stdout.write(`${JSON.stringify(results.map(syncJson), null, 2)}\n`);
          else for (const r of results) process.stdout.write(`${describeSync(r)}\n`);
          const removed = results.filter((r) => r.change === 'removed').length;
          if (scheduled.length === 0) process.stderr.write(`no scheduled pipelines in ${dir}: removed all ${removed} scheduler(s)\n`);
          else process.stderr.write(`${scheduled.length} scheduled pipeline(s) in ${dir}: ${summary(results)}\n`);
        } finally {
          await schedules.close();
        }
      }),
    );
  schedule
    .command('list')
    .description('show each job scheduler: its pipeline, cron and time zone, next fire time, input and output')
    .option('--json', 'print the schedulers as JSON')
    .action(
      action(async (flags: { json?: boolean }) => {
        const settings = loadSettings();
        const { OwnConnectionQueue, SCHEDULES_QUEUE } = await import('../queue/index.js');
        const schedules = new OwnConnectionQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix }, SCHEDULES_QUEUE);
        try {
          const views = await listSchedules(await schedules.ready());
          if (flags.json) process.stdout.write(`${JSON.stringify(views, null, 2)}\n`);
          else for (const v of views) process.stdout.write(`${describeSchedule(v)}\n`);
          if (!flags.json) process.stderr.write(`${views.length} scheduler(s)${views.length === 0 ? '; `schedule sync` makes them from jobs/*.yaml' : ''}\n`);
        } finally {
          await schedules.close();
        }
      }),
    );
}

/** A sync result with its next fire time as ISO 8601 (UTC). */
function syncJson(r: ScheduleSyncResult) {
  const { next, ...rest } = r;
  return { ...rest, ...(next === undefined ? {} : { next: new Date(next).toISOString() }) };
}

/** `added      nightly-rentals  "0 2 * * *" Europe/Paris  next 2026-11-24T01:00:00.000Z` */
function describeSync(r: ScheduleSyncResult): string {
  const { next } = syncJson(r);
  const fires = r.change === 'removed' ? '' : `  "${r.cron}" ${r.tz}${next ? `  next ${next}` : ''}`;
  return `${r.change.padEnd(10)} ${r.id}${fires}`;
}

/** `2 added, 1 removed` */
function summary(results: ScheduleSyncResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r.change, (counts.get(r.change) ?? 0) + 1);
  return [...counts].map(([change, n]) => `${n} ${change}`).join(', ');
}

/** `nightly-rentals  "0 2 * * *" Europe/Paris  next 2026-11-24T01:00:00.000Z (2026-11-24T02:00:00+01:00)  input ...  output ...` */
function describeSchedule(v: ScheduleView): string {
  const next = v.next ? `next ${v.next} (${v.nextLocal} ${v.tz})` : 'no next fire time';
  const what = v.template ? `model ${v.template.model}  input ${v.template.input}  output ${v.template.output}` : `(${v.problem})`;
  return `${v.id}  "${v.cron ?? '?'}" ${v.tz}  ${next}  ${what}`;
}
