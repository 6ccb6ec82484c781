import type { Command } from 'commander';
import { serviceClientFactory } from '../app/index.js';
import { loadSettings } from '../config/index.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';
import { UsageError } from '../errors.js';
import { isLoopback, loadMetricsServer } from '../http/index.js';
import { lineageListener } from '../lineage/index.js';
import { createLogger, type Logger } from '../log.js';
import { allListeners, type ScoringObserver } from '../scoring/index.js';
import { DEFAULT_WORKER_OPTIONS, queuedWebhooks, ReconnectingRunQueue, redisTarget, startWorker } from '../queue/index.js';
import { Releasers } from '../shutdown-steps.js';
import { listenRefusal } from './listen-refusal.js';
import { action } from './action.js';
import { runUntilSignal } from './graceful-exit.js';
import { deploymentStorage } from './deployment-storage.js';
import { count, tcpPort } from './number-flags.js';
import { loadPipelinesIfPresent, loadScheduleWriters, pipelineRunCheck } from '../triggers/index.js';

interface WorkerFlags {
  maxInFlight: number;
  /** The old name of --max-in-flight, still taken (with a warning): on `score` and `enqueue` it is the run's budget, not this cap. */
  concurrency?: number;
  segments: number;
  shutdownTimeout: number;
  lockDuration: number;
  metricsPort?: number;
  metricsHost?: string;
}

/** Where the worker's metrics server listens: --metrics-port and --metrics-host, and API_TOKEN (never logged). */
interface MetricsEndpoint {
  host: string;
  port: number;
  token?: string;
}

/** --metrics-port and --metrics-host, checked: metrics beyond this machine need API_TOKEN. */
function metricsEndpoint(flags: WorkerFlags, apiToken: string | undefined): MetricsEndpoint | undefined {
  if (flags.metricsPort === undefined) {
    if (flags.metricsHost !== undefined) throw new UsageError('worker: --metrics-host needs --metrics-port');
    return undefined;
  }
  const host = flags.metricsHost ?? PROCESS_DEFAULTS.metricsHost;
  if (!isLoopback(host) && !apiToken) {
    throw new UsageError(
      `worker: --metrics-host ${host} is reachable from other machines: set API_TOKEN so /metrics requires it, or keep the default ${PROCESS_DEFAULTS.metricsHost}`,
    );
  }
  return { host, port: flags.metricsPort, token: apiToken };
}

/**
 * The worker's metrics: its registry, what hears the scoring into it, and its own small server,
 * listening before the worker starts (metrics answer while Redis is away) and closed after it
 * stopped (scrapes see the shutdown through to its end). A port that cannot be bound fails the
 * start (E_USAGE, exit 2).
 */
async function startWorkerMetrics(endpoint: MetricsEndpoint, concurrency: number, log: Logger, releasers: Releasers): Promise<ScoringObserver> {
  const [{ createMetricsRegistry, scoringMetrics }, { startMetricsServer }] = await Promise.all([import('../metrics/index.js'), loadMetricsServer()]);
  const { host, port, token } = endpoint;
  const registry = createMetricsRegistry();
  const observer = scoringMetrics(registry, { maxConcurrency: concurrency });
  const server = await startMetricsServer({ host, port, registry, credentials: { token }, log }).catch((err: unknown) => {
    throw listenRefusal(err, `worker: --metrics-port ${port}`, host, port, 'choose another --metrics-port or --metrics-host');
  });
  releasers.add('metrics server', () => server.close());
  return observer;
}

/**
 * --max-in-flight, or its old name --concurrency with one warning on stderr: on `worker` it was
 * a cap of the process, where on `score` and `enqueue` it is the run's budget. Both at once are refused.
 */
function maxInFlightFlag(flags: WorkerFlags, command: Command): number {
  if (flags.concurrency === undefined) return flags.maxInFlight;
  if (command.getOptionValueSource('maxInFlight') === 'cli')
    throw new UsageError('worker: --concurrency is the old name of --max-in-flight: give only --max-in-flight');
  process.stderr.write('batch-scorer: worker --concurrency is deprecated: use --max-in-flight (the same cap on predict requests in flight in this process)\n');
  return flags.concurrency;
}

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('take runs, their segments, webhook deliveries and the jobs schedules fire (with JOBS_DIR) from Redis until SIGTERM (REDIS_URL)')
    .option('--max-in-flight <n>', 'predict requests in flight in this process', count('--max-in-flight'), DEFAULT_WORKER_OPTIONS.maxInFlight)
    .option('--concurrency <n>', 'deprecated: the old name of --max-in-flight', count('--concurrency'))
    .option('--segments <n>', 'segments held at once at most: a next one only while those held drain', count('--segments'), DEFAULT_WORKER_OPTIONS.segments)
    .option(
      '--shutdown-timeout <ms>',
      'on SIGTERM, wait this long for in-flight segments before handing them back',
      count('--shutdown-timeout'),
      DEFAULT_WORKER_OPTIONS.shutdownTimeoutMs,
    )
    .option(
      '--lock-duration <ms>',
      "BullMQ lock: a killed worker's segments are taken over after about this long",
      count('--lock-duration'),
      DEFAULT_WORKER_OPTIONS.lockDurationMs,
    )
    .option('--metrics-port <port>', 'serve Prometheus metrics on GET /metrics at this port (bearer API_TOKEN when set)', tcpPort('--metrics-port'))
    .option('--metrics-host <host>', `address the metrics server binds (default ${PROCESS_DEFAULTS.metricsHost}; beyond loopback only with API_TOKEN)`)
    .action(
      action(async (flags: WorkerFlags, command: Command) => {
        const maxInFlight = maxInFlightFlag(flags, command);
        const settings = loadSettings();
        const metrics = metricsEndpoint(flags, settings.apiToken);
        const log = createLogger({ level: settings.logLevel });
        const queue = { redisUrl: settings.redisUrl, prefix: settings.queuePrefix };
        // A REDIS_URL or QUEUE_PREFIX that cannot work is refused (E_CONFIG) before anything opens.
        redisTarget(queue);
        // What opens registers its cleanup; the shutdown runs them in reverse, each even when one before it failed.
        const releasers = new Releasers(log);
        const storage = deploymentStorage(settings);
        releasers.add('storage', () => Promise.resolve(storage.close()));
        // Loaded before anything starts: from the first job taken to runUntilSignal's handlers, nothing
        // may wait, or a SIGTERM in between would kill the process instead of shutting it down.
        const { scheduledRuns } = await loadScheduleWriters();
        const lineage = lineageListener(settings.lineage, log);
        releasers.add('lineage events', () => lineage.drain());
        try {
          // What the jobs folder declares bounds what fired jobs and runs naming a pipeline may do: without one, a worker takes no fired jobs.
          const pipelines = await loadPipelinesIfPresent(settings.jobsDir);
          if (!pipelines) log.warn({ jobsDir: settings.jobsDir }, 'no jobs folder (JOBS_DIR): this worker takes no scheduled runs');
          const webhooks = queuedWebhooks(settings, pipelines, queue, storage, log);
          const observer = metrics && (await startWorkerMetrics(metrics, maxInFlight, log, releasers));
          const worker = startWorker(queue, storage, log, {
            maxInFlight,
            segments: flags.segments,
            shutdownTimeoutMs: flags.shutdownTimeout,
            lockDurationMs: flags.lockDuration,
            predictors: serviceClientFactory(settings.serviceTokens, settings.limits),
            policy: settings.policy,
            ...(pipelines && { checkPipelineRun: pipelineRunCheck(pipelines) }),
            limits: settings.limits,
            runDefaults: settings.runDefaults,
            observer,
            // Each worker also turns the jobs that schedulers fire into runs (jobs/*.yaml schedules).
            alsoProcess: [...(pipelines ? [scheduledRuns(new ReconnectingRunQueue(queue), pipelines, log)] : []), ...(webhooks ? [webhooks.also] : [])],
            listener: allListeners([lineage, ...(webhooks ? [webhooks.listener] : [])], log),
            retention: settings.retention,
          });
          releasers.add('worker', () => worker.close());
        } catch (err) {
          await releasers.release();
          throw err;
        }
        await runUntilSignal(log, flags.shutdownTimeout + PROCESS_DEFAULTS.shutdownMarginMs, () => releasers.release());
      }),
    );
}
