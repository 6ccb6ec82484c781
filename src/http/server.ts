import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import type { DeploymentPolicy } from '../config/deployment-policy.js';
import { redactPath, type Logger } from '../log.js';
import { collectQueueDepths } from '../metrics/queue-depths.js';
import { collectRunDrift } from '../metrics/run-drift.js';
import { trackRunOutcomes } from '../metrics/run-outcomes.js';
import { redisUnavailable } from '../queue/queue-connection.js';
import { RUNS_QUEUE, SCHEDULES_QUEUE, SEGMENTS_QUEUE, redisConnection, type QueueConfig } from '../queue/queues.js';
import { RedisWatch } from '../queue/redis-watch.js';
import { RunProgressStore } from '../queue/run-progress.js';
import { runShutdownSteps } from '../shutdown-steps.js';
import type { Storage } from '../storage/storage-types.js';
import { serverAuth, type Credentials } from './auth.js';
import { dashboardInlineStyles, QUEUES_PATH, queueDashboard } from './dashboard.js';
import type { Pipeline } from '../triggers/pipelines.js';
import { eventRoutes } from './event-routes.js';
import { BODY_LIMIT_BYTES, installErrorHandling } from './http-errors.js';
import { registerMetricsRoute } from './metrics-server.js';
import { openApiDocument } from './openapi.js';
import { checkSubmission, policedRuns } from './policed-runs.js';
import { runPages } from './run-pages.js';
import { runRoutes, type RunRoutesDeps } from './run-routes.js';
import { lazyRunQueue, type RunsApi } from './runs-api.js';
import { securityHeaders } from './security-headers.js';

/** How long `/readyz` waits for Redis to answer a PING: a probe wants an answer, not a hang. */
export const READY_TIMEOUT_MS = 1_000;

/** Once the shutdown timeout has passed, how long closing the queue connections may take before they are dropped. */
const CLOSE_CONNECTIONS_MS = 2_000;

/** While closing, how often connections whose requests have been answered are closed. */
const IDLE_SWEEP_MS = 50;

/** An incoming `x-request-id` taken as is: short, and nothing a log line could be forged with. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** What the HTTP server serves from; all of it is built by startServe, or by a test. */
export interface ServerDeps {
  runs: RunsApi;
  /** `POST /runs` with `dryRun` (see RunRoutesDeps). */
  dryRun: RunRoutesDeps['dryRun'];
  /** Where run folders (manifests) are read from. */
  storage: Storage;
  log: Logger;
  /** Without any, every route is open (`serve` allows that on loopback only, or with `--insecure`). */
  credentials: Credentials;
  /** Served at `/metrics`. */
  metrics: Registry;
  /** Resolves when the server can take work; otherwise rejects saying why (Redis away, shutting down). */
  ready: () => Promise<void>;
  /** The queues the dashboard shows (bull-board at /ui/queues). */
  queues: readonly Queue[];
  /** Let dashboard users retry, remove, pause and clean jobs; read-only otherwise. */
  queueActions?: boolean;
  /**
   * The run pages (see runPages), served under `/ui` behind its authentication (basic auth or
   * the token): `/ui/runs`, where `/ui` leads, `/ui/runs/:id`, `/ui/pipelines` and `/ui/assets/*`.
   */
  runPages: FastifyPluginAsync;
  /** The pipelines of `jobs/*.yaml` whose file drops `POST /events/s3` starts runs of. */
  pipelines: readonly Pipeline[];
}

/**
 * The HTTP server of `serve`, not yet listening: health (open), the run API, `POST /events/s3`,
 * `/openapi.json` and `/metrics` (bearer token), and `/ui` (basic auth or the token). Every answer carries
 * `x-request-id` (the client's when it sent a sane one), which every log line of the request has, and
 * the security headers (security-headers.ts). Refused credentials are throttled per client (auth-throttle.ts).
 */
export function buildServer(deps: ServerDeps): FastifyInstance {
  const logger: FastifyBaseLogger = deps.log.child({ component: 'http' }, { serializers: { req: requestForLog } });
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // On every answer, not only the /ui scope's: refusals and 404s under /ui come from the root's
  // handlers, and the API's JSON loses nothing by them.
  app.addHook('onSend', securityHeaders({ inlineStyles: dashboardInlineStyles() }));
  // One throttle of failed authentication for every route: a guesser cannot spread its guesses.
  const auth = serverAuth(deps.credentials);
  installErrorHandling(app, auth);

  // Probes call these every few seconds: their requests are not logged unless something is wrong.
  app.get('/healthz', { logLevel: 'warn' }, () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn' }, async (request, reply) => {
    try {
      await deps.ready();
      return { status: 'ready' };
    } catch (err) {
      // The reason goes to the log, not to an open endpoint (it names the Redis host).
      request.log.warn({ err }, 'not ready');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  const openApi = openApiDocument();
  void app.register(async (api) => {
    api.addHook('onRequest', auth.api);
    await api.register(runRoutes, { runs: deps.runs, storage: deps.storage, dryRun: deps.dryRun });
    await api.register(eventRoutes, { runs: deps.runs, pipelines: deps.pipelines });
    api.get('/openapi.json', () => openApi);
  });
  registerMetricsRoute(app, deps.metrics, auth);

  void app.register(
    async (ui) => {
      ui.addHook('onRequest', auth.ui);
      ui.get('/', (_request, reply) => reply.redirect('/ui/runs'));
      await ui.register(queueDashboard(deps.queues, { actions: deps.queueActions ?? false }), { prefix: QUEUES_PATH.slice('/ui'.length) });
      await ui.register(deps.runPages);
    },
    { prefix: '/ui' },
  );
  return app;
}

/** A request as log lines show it: the query string, which may hold a token, is left out. */
function requestForLog(request: FastifyRequest) {
  return { method: request.method, url: redactPath(request.url), remoteAddress: request.ip };
}

export interface ServeOptions {
  host: string;
  port: number;
  /** On close, how long requests in flight may take to finish before their connections are cut. */
  shutdownTimeoutMs: number;
  queue: QueueConfig;
  credentials: Credentials;
  storage: Storage;
  log: Logger;
  metrics: Registry;
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

/**
 * Starts `serve`: its Redis connection (for `/readyz` and the dashboard's queues), the run queue
 * (made once Redis first answers), and the HTTP server. It starts whether Redis answers or not;
 * `/readyz` says which.
 */
export async function startServe(options: ServeOptions): Promise<Serving> {
  const { log } = options;
  const redis = redisConnection(options.queue, 'producer');
  const watch = new RedisWatch(redis, log);
  // The schedules queue too: its delayed jobs are the schedulers' next firings, which the dashboard and the depths show.
  const queues = [RUNS_QUEUE, SEGMENTS_QUEUE, SCHEDULES_QUEUE].map((name) => new Queue(name, { connection: redis, prefix: options.queue.prefix }));
  const segmentsQueue = queues[1];
  for (const q of queues) q.on('error', (err) => watch.error(err));
  const pingRedis = async () => {
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
  const runs = lazyRunQueue(options.queue, pingRedis);
  const api = policedRuns(runs.api, options.policy);
  // serve scores nothing: its metrics are the queues' depths, the runs that finished, and the drift of each pipeline's latest.
  collectQueueDepths(options.metrics, queues);
  collectRunDrift(options.metrics, { pipelines: (options.pipelines ?? []).map((p) => p.name), runs: api, storage: options.storage }, log);
  const outcomes = trackRunOutcomes(options.metrics, options.queue, log);
  let draining = false;
  const app = buildServer({
    runs: api,
    // Checked before its input is read: a dry run reads inside this process.
    dryRun: async (submission) => {
      await checkSubmission(options.policy, submission);
      return options.dryRun(submission);
    },
    storage: options.storage,
    log,
    credentials: options.credentials,
    metrics: options.metrics,
    ready: async () => {
      if (draining) throw new Error('shutting down');
      await pingRedis();
    },
    queues,
    queueActions: options.queueActions,
    pipelines: options.pipelines ?? [],
    runPages: runPages({
      runs: api,
      storage: options.storage,
      segments: segmentsQueue,
      progress: new RunProgressStore(redis, options.queue.prefix),
      log,
      queuesPath: `${QUEUES_PATH}/`,
      pipelines: options.pipelines ?? [],
    }),
  });
  // Cleanups run in reverse order of opening, each even when one before it failed.
  const closeConnections = () =>
    runShutdownSteps(
      [
        ['run outcomes', () => outcomes.close()],
        ['run queue', () => runs.close()],
        ['dashboard queues', () => Promise.all(queues.map((q) => q.close()))],
        [
          'redis',
          () => {
            watch.stop();
            return redis.close();
          },
        ],
      ],
      log,
    );
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    await app.close().catch(() => undefined);
    await closeConnections();
    throw err;
  }
  const { port } = app.server.address() as { port: number };
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  log.info(
    {
      url,
      redis: redis.shownUrl,
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
        await Promise.race([closeConnections(), late]);
        clearTimeout(timer);
        log.info('server stopped');
      })()),
  };
}

/** Closes the HTTP server: no new connections, requests in flight finish until `timeoutMs`, then their connections are cut. */
async function closeHttp(app: FastifyInstance, timeoutMs: number, log: Logger): Promise<void> {
  const timer = setTimeout(() => {
    log.warn('shutdown timeout: cutting the connections of requests still in flight');
    app.server.closeAllConnections();
  }, timeoutMs);
  // Node closes the keep-alive connections idle when closing starts, not those that become idle
  // once their request is answered: they would hold the close until their keep-alive timeout.
  const idle = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    await app.close();
  } catch (err) {
    log.error({ err }, 'closing the HTTP server failed');
  } finally {
    clearTimeout(timer);
    clearInterval(idle);
  }
}
