import type { Command } from 'commander';
import { loadSettings } from '../config/index.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';
import { BatchScorerError } from '../errors.js';
import { createLogger } from '../log.js';
import { Releasers } from '../shutdown-steps.js';
import { createStorage } from '../storage/index.js';
import { loadPipelines, pollDrops, watchDrops, type FileDropPipeline } from '../triggers/index.js';
import { action } from './action.js';
import { runUntilSignal } from './graceful-exit.js';
import { positiveNumber } from './number-flags.js';
import { JOBS_FLAG } from './pipelines.js';

/** A day: longer waits would overflow Node's timers (about 24.8 days), which then fire at once. */
const MAX_INTERVAL_S = 86_400;

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description("poll the prefixes of jobs/*.yaml's file-drop pipelines and enqueue a run for each new file version, until SIGTERM (REDIS_URL, S3_*)")
    .option('--interval <s>', 'seconds between two polls', positiveNumber('--interval', MAX_INTERVAL_S), PROCESS_DEFAULTS.watchIntervalS)
    .option(...JOBS_FLAG)
    .option('--once', 'poll once, print the run ids enqueued, and exit (1 when a prefix could not be listed)')
    .action(
      action(async (flags: { interval: number; jobs?: string; once?: boolean }) => {
        const settings = loadSettings();
        const jobsDir = flags.jobs ?? settings.jobsDir;
        const pipelines = (await loadPipelines(jobsDir)).filter((p): p is FileDropPipeline => p.kind === 'trigger');
        if (pipelines.length === 0) {
          throw new BatchScorerError('E_CONFIG', `${jobsDir}: no pipeline declares a trigger (prefix and suffix): watch has nothing to poll`);
        }
        const log = createLogger({ level: settings.logLevel });
        const storage = createStorage(settings.s3);
        // bullmq loads only for the commands that use it.
        const { RunQueue } = await import('../queue/index.js');
        const runs = new RunQueue({ redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
        const deps = { pipelines, storage, runs, log };
        // What opens registers its cleanup; the shutdown runs them in reverse, each even when one before it failed.
        const releasers = new Releasers(log);
        releasers.add('storage', () => Promise.resolve(storage.close()));
        releasers.add('run queue', () => runs.close());
        try {
          // Redis away at the start is a setting to check (E_REDIS_UNAVAILABLE, exit 2); later, a pass waits for it.
          await runs.fileDropClaims(pipelines[0].name, []);
        } catch (err) {
          await releasers.release();
          throw err;
        }
        log.info({ jobsDir, pipelines: pipelines.map((p) => `${p.name}: ${p.trigger.prefix}*${p.trigger.suffix}`), intervalS: flags.interval }, 'watching');
        if (flags.once) {
          const pass = await pollDrops(deps).finally(() => releasers.release());
          for (const run of pass.started) process.stdout.write(`${run.runId}\n`);
          if (pass.failed.length > 0) {
            const [first] = pass.failed;
            throw new BatchScorerError(
              'E_STORAGE',
              `${pass.failed.length} prefix(es) or file(s) could not be polled; ${first.location ?? first.prefix}: ${first.error}`,
            );
          }
          return;
        }
        const stop = new AbortController();
        const watching = watchDrops(deps, flags.interval * 1000, stop.signal);
        releasers.add('polling', async () => {
          stop.abort();
          await watching;
        });
        await runUntilSignal(log, PROCESS_DEFAULTS.stopTimeoutMs, () => releasers.release());
      }),
    );
}
