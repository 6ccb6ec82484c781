import { fastify, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { Logger } from '../log.js';
import { GUARDED, TAGS } from './api-responses.js';
import { serverAuth, type Credentials, type ServerAuth } from './auth.js';
import { useZodSchemas } from './zod-schemas.js';

const metricsSchema = {
  operationId: 'metrics',
  summary: 'Prometheus metrics',
  tags: [TAGS.probes],
  response: {
    200: { description: 'the text exposition format', content: { 'text/plain': { schema: z.string() } } },
    ...GUARDED,
  },
};

/**
 * Mounts `GET /metrics` (Prometheus text format) on an app: behind the bearer token when one is
 * configured (`API_TOKEN`; no basic auth: scrapers send a token). Scrapes are not logged (one
 * every few seconds would drown the log); failures are.
 */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry, auth: ServerAuth): void {
  app.get('/metrics', { logLevel: 'warn', onRequest: auth.api, schema: metricsSchema }, async (_request, reply) => {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}

/**
 * A worker's metrics endpoint: `GET /metrics` and `GET /healthz` (open: it says the process is
 * up), on its own small server. Closing it is a step of the worker's shutdown.
 */
export async function startMetricsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  credentials: Credentials;
  log: Logger;
}): Promise<{ url: string; close(): Promise<void> }> {
  const loggerInstance: FastifyBaseLogger = options.log.child({ component: 'metrics-server' });
  const app = fastify({ loggerInstance });
  useZodSchemas(app);
  app.get('/healthz', { logLevel: 'warn' }, () => ({ status: 'ok' }));
  registerMetricsRoute(app, options.registry, serverAuth(options.credentials));
  const auth = options.credentials.token ? 'bearer token required' : 'no credentials required';
  const url = await app.listen({ host: options.host, port: options.port, listenTextResolver: (address) => `metrics at ${address}/metrics (${auth})` });
  let closing: Promise<void> | undefined;
  return { url, close: () => (closing ??= app.close()) };
}
