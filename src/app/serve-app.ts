import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { DEFAULT_LIMITS, type DeploymentPolicy, type Limits, type RunOptionsInput } from '../config/index.js';
import type { Logger } from '../log.js';
import { type Credentials, loadServeServer, type RunRoutesDeps } from '../http/index.js';
import type { RunListener } from '../scoring/index.js';
import { collectQueueDepths, collectRunDrift, trackRunOutcomes } from '../metrics/index.js';
import {
  redisUnavailable,
  RUNS_QUEUE,
  SCHEDULES_QUEUE,
  SEGMENTS_QUEUE,
  redisConnection,
  type QueueConfig,
  type QueueConnection,
  ReconnectingRunQueue,
  RedisWatch,
  openRunEvents,
  RunProgressStore,
} from '../queue/index.js';
import { knownRuns, INDEX_REFRESH_MS, RunIndex } from '../run-index/index.js';
import { Releasers } from '../shutdown-steps.js';
import { segmentBoundCheck } from './segment-bound-check.js';
import type { Storage } from '../storage/index.js';
import { listSchedules, type Pipeline } from '../triggers/index.js';

/** The HTTP side of serve, loaded when serve starts (see loadServeServer): a door import would load fastify for every command. */
type ServeServer = Awaited<ReturnType<typeof loadServeServer>>;

/** How long `/readyz` waits for Redis to answer a PING: a probe wants an answer, not a hang. */
const READY_TIMEOUT_MS = 1_000;

/** Once the shutdown timeout has passed, how long closing the queue connections may take before they are dropped. */
const CLOSE_CONNECTIONS_MS = 2_000;

/** What `serve` is started with: the command builds these from its flags and settings, a test from its own. */
export interface ServeOptions {
  /** Interface to listen on (`--host`). */
  host: string;
  /** Port to listen on (`--port`, else PORT); 0 picks a free one. */
  port: number;
  /** On close, how long requests in flight may take to finish before their connections are cut. */
  shutdownTimeoutMs: number;
  /** The Redis and key prefix of the queues the workers take runs from. */
  queue: QueueConfig;
  /** The API's bearer token and the dashboard's login; without any, every route is open. */
  credentials: Credentials;
  /** Where run folders (manifests, outputs for the run pages) are read from. */
  storage: Storage;
  log: Logger;
  /** The registry `/metrics` serves; serve adds the queue depths, run outcomes and drift to it. */
  metrics: Registry;
  /** Let dashboard users retry, remove, pause and clean jobs (`--queue-actions`); read-only otherwise. */
  queueActions?: boolean;
  /** The pipelines of `jobs/*.yaml` (none: `POST /events/s3` ignores every event). */
  pipelines?: readonly Pipeline[];
  /** `POST /runs` with `dryRun`, in this process (see RunRoutesDeps). */
  dryRun: RunRoutesDeps['dryRun'];
  /**
   * What runs may read, write and call: checked before a run is enqueued, resumed, started by a
   * file drop or dry-run here (the storage given should be guarded by it too, for the pages' reads).
   */
  policy: DeploymentPolicy;
  /**
   * The deployment's bounds (see LIMITS): a submission's segments (MAX_SEGMENTS), checked before
   * it is queued, and the Idempotency-Keys kept (MAX_IDEMPOTENCY_KEYS); DEFAULT_LIMITS when absent.
   */
  limits?: Limits;
  /** Hears a held run end when it is judged over the API (webhooks, lineage). */
  listener?: RunListener;
  /** The run options a submission's unset ones default to, as the workers' do (the config file's, MODEL_SERVICE_URL). */
  runDefaults?: RunOptionsInput;
  /** How old the index of the run folders under OUTPUT_ROOTS may be when read, in ms (`--index-refresh`; INDEX_REFRESH_MS when absent). */
  indexRefreshMs?: number;
}

/** A listening server; `close()` is the graceful shutdown and is safe to call twice. */
export interface Serving {
  /** Where it listens, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /**
   * Stops taking connections and answers 503 on `/readyz`, lets requests in flight finish for up
   * to the shutdown timeout (then cuts their connections), then closes the queue connections.
   */
  close(): Promise<void>;
}

/** What `serve` holds on Redis: its connection, the watch that logs its losses, the dashboard's queues and a PING with a deadline. */
interface RedisSide {
  redis: QueueConnection;
  /** The runs, segments and schedules queues, in that order. */
  queues: Queue[];
  /** Resolves once Redis answers a PING within READY_TIMEOUT_MS; E_REDIS_UNAVAILABLE otherwise. */
  ping: () => Promise<void>;
}

/**
 * Starts `serve`, building everything its HTTP server is given: the Redis connection (for
 * `/readyz` and the dashboard's queues), the run queue (made once Redis first answers), the runs
 * queue's events and the metrics read from them and from the queues, and the server itself. It
 * starts whether Redis answers or not; `/readyz` says which.
 */
export async function startServe(options: ServeOptions): Promise<Serving> {
  const { log } = options;
  // Loaded before anything opens: a failed load leaves nothing to release.
  const http = await loadServeServer();
  // Cleanups are registered as what they release opens, and run in reverse, each even when one before it failed.
  const releasers = new Releasers(log);
  const side = openRedisSide(options, releasers);
  const runs = openRuns(http, options, side, releasers);
  let draining = false;
  const app = buildApp(http, options, side, runs, () => draining);
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    await app.close().catch(() => undefined);
    await releasers.release();
    throw err;
  }
  const url = listeningUrl(app, options);
  log.info(
    {
      url,
      redis: side.redis.shownUrl,
      prefix: options.queue.prefix,
      // Which credentials are set, never what they are.
      auth: { bearer: Boolean(options.credentials.token), basic: Boolean(options.credentials.dashboard) },
      queueActions: options.queueActions ?? false,
      fileDropPipelines: (options.pipelines ?? []).filter((p) => p.kind === 'trigger').map((p) => p.name),
    },
    'serving',
  );
  let closing: Promise<void> | undefined;
  return {
    url,
    close: () =>
      (closing ??= (async () => {
        draining = true;
        await closeServe(http, app, side.redis, releasers, options);
      })()),
  };
}

/** The Redis connection, its watch, and the queues the dashboard and the depths read, each registered for release. */
function openRedisSide(options: ServeOptions, releasers: Releasers): RedisSide {
  const redis = redisConnection(options.queue, 'producer');
  const watch = new RedisWatch(redis, options.log);
  releasers.add('redis', () => {
    watch.stop();
    return redis.close();
  });
  // The schedules queue too: its delayed jobs are the schedulers' next firings, which the dashboard and the depths show.
  const queues = [RUNS_QUEUE, SEGMENTS_QUEUE, SCHEDULES_QUEUE].map((name) => new Queue(name, { connection: redis, prefix: options.queue.prefix }));
  releasers.add('dashboard queues', () => Promise.all(queues.map((q) => q.close())));
  for (const q of queues) q.on('error', (err) => watch.error(err));
  const ping = async () => {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer to PING')), READY_TIMEOUT_MS)));
    try {
      await Promise.race([redis.ping(), timedOut]);
    } catch (err) {
      throw redisUnavailable(redis, READY_TIMEOUT_MS, err);
    } finally {
      clearTimeout(timer);
    }
  };
  return { redis, queues, ping };
}

/** The runs `serve` answers for: the run queue behind the deployment policy, and the runs known from it and the run folders. */
interface ServedRuns {
  api: ReturnType<ServeServer['policedRuns']>;
  known: ReturnType<typeof knownRuns>;
}

/**
 * The run queue (policed), the runs known from it and from the run folders, and the metrics read
 * from them: serve scores nothing, so its metrics are the queues' depths, the runs that finished,
 * and the drift of each pipeline's latest.
 */
function openRuns({ policedRuns }: ServeServer, options: ServeOptions, side: RedisSide, releasers: Releasers): ServedRuns {
  const { log } = options;
  const limits = options.limits ?? DEFAULT_LIMITS;
  const runs = new ReconnectingRunQueue(options.queue, side.ping, { maxIdempotencyKeys: limits.idempotencyKeys });
  releasers.add('run queue', () => runs.close());
  const api = policedRuns(runs, options.policy, segmentBoundCheck(options.storage, limits, options.runDefaults ?? {}, log));
  collectQueueDepths(options.metrics, side.queues);
  collectRunDrift(options.metrics, { pipelines: (options.pipelines ?? []).map((p) => p.name), runs: api, storage: options.storage }, log);
  const known = knownRuns(api, runIndex(options, releasers));
  const runEvents = openRunEvents(options.queue, log);
  releasers.add('run outcomes', () => runEvents.close());
  trackRunOutcomes(options.metrics, runEvents.events, log);
  return { api, known };
}

/** The HTTP server over the runs and queues; `/readyz` fails while `draining()` says the server is shutting down. */
function buildApp(
  { buildServer, checkSubmission, runPages, QUEUES_PATH }: ServeServer,
  options: ServeOptions,
  side: RedisSide,
  runs: ServedRuns,
  draining: () => boolean,
): FastifyInstance {
  const { log } = options;
  const [, segmentsQueue, schedulesQueue] = side.queues;
  return buildServer({
    runs: runs.api,
    known: runs.known,
    // Checked before its input is read: a dry run reads inside this process.
    dryRun: async (submission) => {
      await checkSubmission(options.policy, submission);
      return options.dryRun(submission);
    },
    storage: options.storage,
    ...(options.listener && { listener: options.listener }),
    log,
    credentials: options.credentials,
    metrics: options.metrics,
    ready: async () => {
      if (draining()) throw new Error('shutting down');
      await side.ping();
    },
    queues: side.queues,
    queueActions: options.queueActions,
    pipelines: options.pipelines ?? [],
    runPages: runPages({
      runs: runs.known,
      schedules: () => listSchedules(schedulesQueue),
      storage: options.storage,
      segments: segmentsQueue,
      progress: new RunProgressStore(side.redis, options.queue.prefix),
      log,
      queuesPath: `${QUEUES_PATH}/`,
      pipelines: options.pipelines ?? [],
    }),
  });
}

/** Where a listening server is reached, e.g. `http://127.0.0.1:8080` (an IPv6 host in brackets). */
function listeningUrl(app: FastifyInstance, options: ServeOptions): string {
  const { port } = app.server.address() as { port: number };
  return `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
}

/**
 * The graceful shutdown: no more connections, requests in flight finished for up to the
 * shutdown timeout, then what serve opened released, the queue connections dropped if that
 * takes longer than CLOSE_CONNECTIONS_MS.
 */
async function closeServe(
  { closeHttp }: ServeServer,
  app: FastifyInstance,
  redis: QueueConnection,
  releasers: Releasers,
  options: ServeOptions,
): Promise<void> {
  const { log } = options;
  log.info({ timeoutMs: options.shutdownTimeoutMs }, 'shutting down: taking no more connections, finishing requests in flight');
  await closeHttp(app, options.shutdownTimeoutMs, log);
  // While Redis is away, BullMQ's close and QUIT would wait for it: the connections are dropped instead.
  if (redis.status !== 'ready') redis.disconnectAll();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>(
    (resolve) =>
      (timer = setTimeout(() => {
        log.warn({ redis: redis.shownUrl }, 'closing the queue connections did not finish in time: dropped');
        redis.disconnectAll();
        resolve();
      }, CLOSE_CONNECTIONS_MS)),
  );
  await Promise.race([releasers.release(), late]);
  clearTimeout(timer);
  log.info('server stopped');
}

/**
 * The index of the run folders under OUTPUT_ROOTS, its first scan begun at once; none without
 * OUTPUT_ROOTS, which leaves serve no folders to read: the queue alone lists runs then, and the
 * log says so once.
 */
function runIndex(options: ServeOptions, releasers: Releasers): RunIndex | undefined {
  const { log, policy } = options;
  if (!policy.outputRoots) {
    log.info('OUTPUT_ROOTS is not set: serve has no run folders to read, and lists the runs on the queue alone (not score runs, nor runs Redis no longer has)');
    return undefined;
  }
  const index = new RunIndex({ storage: options.storage, roots: policy.outputRoots, refreshMs: options.indexRefreshMs ?? INDEX_REFRESH_MS, log });
  releasers.add('run index', () => Promise.resolve(index.close()));
  // What fails in a scan is logged where it fails (a root, a file); only a close stops it.
  index.refresh().catch(() => undefined);
  return index;
}
