import { randomUUID } from 'node:crypto';
import helmet from '@fastify/helmet';
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Registry } from 'prom-client';
import { redactPath, type Logger } from '../log.js';
import type { Queue, RunQueueCalls } from '../queue/index.js';
import type { Storage } from '../storage/index.js';
import type { Pipeline } from '../triggers/index.js';
import { serverAuth, type Credentials } from './auth.js';
import { dashboardInlineStyles, QUEUES_PATH, queueDashboard } from './dashboard.js';
import { eventRoutes } from './event-routes.js';
import { registerFacetSchemaRoutes } from './facet-schema-routes.js';
import { BODY_LIMIT_BYTES, installErrorHandling } from './http-errors.js';
import { registerMetricsRoute } from './metrics-server.js';
import { answer } from './api-responses.js';
import { swaggerOptions } from './openapi.js';
import { runRoutes, type RunRoutesDeps } from './run-routes.js';
import { securityHeaders } from './security-headers.js';
import { useZodSchemas } from './zod-schemas.js';

/** While closing, how often connections whose requests have been answered are closed. */
const IDLE_SWEEP_MS = 50;

/** An incoming `x-request-id` taken as is: short, and nothing a log line could be forged with. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** What the HTTP server serves from; all of it is built by startServe (src/app/serve-app.ts), or by a test. */
export interface ServerDeps {
  runs: RunQueueCalls;
  /** The runs `GET /runs` lists and `GET /runs/:id` shows: the queue's and the run folders' (see RunRoutesDeps). */
  known: RunRoutesDeps['known'];
  /** `POST /runs` with `dryRun` (see RunRoutesDeps). */
  dryRun: RunRoutesDeps['dryRun'];
  /** Where run folders (manifests) are read from. */
  storage: Storage;
  /** Hears a held run end when it is judged (see RunRoutesDeps). */
  listener?: RunRoutesDeps['listener'];
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
 * The HTTP server of `serve`, not yet listening: health and the lineage facets' schemas (open), the run API, `POST /events/s3`,
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
  void app.register(helmet, securityHeaders({ inlineStyles: dashboardInlineStyles() }));
  // One throttle of failed authentication for every route: a guesser cannot spread its guesses.
  const auth = serverAuth(deps.credentials);
  installErrorHandling(app, auth);

  useZodSchemas(app);
  // Before any route: it documents those registered after it.
  void app.register(swagger, swaggerOptions);
  void app.register(probes, { ready: deps.ready });
  registerFacetSchemaRoutes(app);

  void app.register(async (api) => {
    api.addHook('onRequest', auth.api);
    await api.register(runRoutes, {
      runs: deps.runs,
      known: deps.known,
      storage: deps.storage,
      dryRun: deps.dryRun,
      ...(deps.listener && { listener: deps.listener }),
    });
    await api.register(eventRoutes, { runs: deps.runs, pipelines: deps.pipelines });
    api.get('/openapi.json', () => app.swagger());
  });
  void app.register((metrics, _options, done) => {
    registerMetricsRoute(metrics, deps.metrics, auth);
    done();
  });

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

/**
 * `/healthz` and `/readyz`: open, for orchestrators' probes. Left out of the API's document
 * (docs/http-api.md describes them): no request of theirs is refused, so they would be the only
 * operations without a 4xx, and no API client calls them. Their schemas still shape the answers.
 */
const probes: FastifyPluginCallbackZod<{ ready: ServerDeps['ready'] }> = (app, { ready }, done) => {
  const open = { hide: true, security: [] };
  // Probes call these every few seconds: their requests are not logged unless something is wrong.
  app.get(
    '/healthz',
    {
      logLevel: 'warn',
      schema: { ...open, operationId: 'health', summary: 'The process is up', response: { 200: answer('up', z.object({ status: z.literal('ok') })) } },
    },
    () => ({ status: 'ok' as const }),
  );
  const readiness = {
    ...open,
    operationId: 'readiness',
    summary: 'Redis answers, and the server is not shutting down',
    response: {
      200: answer('ready', z.object({ status: z.literal('ready') })),
      503: answer('not ready: Redis does not answer, or the server is shutting down (the log says which)', z.object({ status: z.literal('unavailable') })),
    },
  };
  app.get('/readyz', { logLevel: 'warn', schema: readiness }, async (request, reply) => {
    try {
      await ready();
      return { status: 'ready' as const };
    } catch (err) {
      // The reason goes to the log, not to an open endpoint (it names the Redis host).
      request.log.warn({ err }, 'not ready');
      return reply.code(503).send({ status: 'unavailable' as const });
    }
  });
  done();
};

/** A request as log lines show it: the query string, which may hold a token, is left out. */
function requestForLog(request: FastifyRequest) {
  return { method: request.method, url: redactPath(request.url), remoteAddress: request.ip };
}

/** Closes the HTTP server: no new connections, requests in flight finish until `timeoutMs`, then their connections are cut. */
export async function closeHttp(app: FastifyInstance, timeoutMs: number, log: Logger): Promise<void> {
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
