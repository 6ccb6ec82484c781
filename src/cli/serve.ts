import type { Command } from 'commander';
import { openSettings, loadSettings, parseRunOptions } from '../config/index.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';
import { UsageError } from '../errors.js';
import type { Credentials } from '../http/index.js';
import { createLogger } from '../log.js';
import { lineageListener } from '../lineage/index.js';
import { queuedWebhooks } from '../queue/index.js';
import { allListeners, dryRun, dryRunBounds } from '../scoring/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { loadPipelinesIfPresent } from '../triggers/index.js';
import { listenRefusal } from './listen-refusal.js';
import { action } from './action.js';
import { runUntilSignal } from './graceful-exit.js';
import { deploymentStorage } from './deployment-storage.js';
import { count, tcpPort } from './number-flags.js';
import { JOBS_FLAG } from './pipelines.js';
import { exposureRefusal, openPolicyWarning } from './serve-exposure.js';
import { loadServe, serviceClientFactory } from '../app/index.js';
import { INDEX_REFRESH_MS } from '../run-index/index.js';
import { Releasers } from '../shutdown-steps.js';

/** The flags of `serve`, as commander parses them. */
interface ServeFlags {
  host: string;
  port?: number;
  shutdownTimeout: number;
  indexRefresh: number;
  queueActions?: boolean;
  insecure?: boolean;
  jobs?: string;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'HTTP server: the run API, S3 event notifications (POST /events/s3), the dashboard (/ui: run pages, pipelines, queues at /ui/queues/), /metrics and health checks (REDIS_URL, API_TOKEN, DASHBOARD_USER/DASHBOARD_PASSWORD, JOBS_DIR)',
    )
    .option(
      '--host <address>',
      'address to listen on; beyond loopback only with credentials and INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS set, or --insecure',
      PROCESS_DEFAULTS.serveHost,
    )
    .option('--port <port>', `port to listen on (default: PORT, or ${PROCESS_DEFAULTS.servePort})`, tcpPort('--port'))
    .option(
      '--shutdown-timeout <ms>',
      'on SIGTERM, wait this long for requests in flight',
      count('--shutdown-timeout'),
      PROCESS_DEFAULTS.serveShutdownTimeoutMs,
    )
    .option('--queue-actions', 'let dashboard users retry, remove, pause and clean jobs (read-only otherwise)')
    .option(
      '--index-refresh <ms>',
      'rescan the run folders under OUTPUT_ROOTS (listing them, reading only new or changed manifests) when the runs listed are older than this',
      count('--index-refresh'),
      INDEX_REFRESH_MS,
    )
    .option(...JOBS_FLAG)
    .option(
      '--insecure',
      'listen beyond loopback without credentials or without a deployment policy (anyone who reaches the port may enqueue and cancel runs; runs may reach anything)',
    )
    .action(
      action(async (flags: ServeFlags) => {
        const settings = loadSettings();
        const credentials: Credentials = { token: settings.apiToken, dashboard: settings.dashboard };
        const refusal = exposureRefusal(flags.host, credentials, settings.policy, flags.insecure ?? false);
        if (refusal) throw new UsageError(refusal);
        const log = createLogger({ level: settings.logLevel });
        const open = openSettings(settings.policy);
        if (open.length > 0) log.warn({ unset: open }, openPolicyWarning(open));
        if (settings.dashboard && !settings.apiToken)
          log.warn('DASHBOARD_USER/DASHBOARD_PASSWORD are set but API_TOKEN is not: the run API and /metrics refuse every request');
        // Invalid pipelines refuse the start (E_CONFIG); a missing folder is a serve without any.
        const jobsDir = flags.jobs ?? settings.jobsDir;
        const pipelines = await loadPipelinesIfPresent(jobsDir);
        if (!pipelines) log.info({ jobsDir }, 'no pipelines folder: POST /events/s3 will start no runs');
        // What opens registers its cleanup; the shutdown runs them in reverse, each even when one before it failed.
        const releasers = new Releasers(log);
        const storage = deploymentStorage(settings);
        releasers.add('storage', () => Promise.resolve(storage.close()));
        const metrics = createMetricsRegistry();
        const { startServe } = await loadServe();
        const queue = { redisUrl: settings.redisUrl, prefix: settings.queuePrefix };
        // A held run judged over the API ends here: told as workers tell the runs they end.
        const lineage = lineageListener(settings.lineage, log);
        releasers.add('lineage events', () => lineage.drain());
        const webhooks = queuedWebhooks(settings, pipelines, queue, storage, log);
        if (webhooks) releasers.add('webhook deliveries', () => webhooks.also.close());
        const serving = await startServe({
          host: flags.host,
          port: flags.port ?? settings.port,
          shutdownTimeoutMs: flags.shutdownTimeout,
          queue,
          credentials,
          listener: allListeners([lineage, ...(webhooks ? [webhooks.listener] : [])], log),
          storage,
          log,
          metrics,
          queueActions: flags.queueActions ?? false,
          pipelines: pipelines ?? [],
          policy: settings.policy,
          limits: settings.limits,
          runDefaults: settings.runDefaults,
          indexRefreshMs: flags.indexRefresh,
          // A dry run is planned here, with this process's settings, as `score --dry-run` would.
          dryRun: (submission) =>
            dryRun(
              {
                input: submission.input,
                model: submission.model,
                out: submission.out,
                options: parseRunOptions({ ...settings.runDefaults, ...submission.options }, 'options'),
              },
              {
                storage,
                log,
                predictorFor: serviceClientFactory(settings.serviceTokens, settings.limits),
                limits: settings.limits,
                bounds: dryRunBounds(settings.limits),
              },
            ),
        }).catch(async (err: unknown) => {
          await releasers.release();
          throw listenRefusal(err, 'serve', flags.host, flags.port ?? settings.port, 'choose another --host or --port');
        });
        releasers.add('server', () => serving.close());
        await runUntilSignal(log, flags.shutdownTimeout + PROCESS_DEFAULTS.shutdownMarginMs, () => releasers.release());
      }),
    );
}
