import { findJob, type Queue } from '../queue/index.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorSpec } from '../errors.js';
import type { ErrorBody } from './http-errors.js';
import { excerpt } from '../text-excerpt.js';

/**
 * The queue actions the dashboard allows (with `--queue-actions`), as bull-board's routes below
 * the dashboard's path: retry a failed job or every failed job of a queue, remove a job, clean a
 * queue's jobs of a state, pause and resume a queue or all of them. Any other request but a read
 * is refused, whatever bull-board offers (add, duplicate, promote, change a job's data, delay or
 * priority, empty, obliterate, rate limits, concurrency, job schedulers): none of them adds a job
 * or changes what a job asks.
 */
const ALLOWED_ACTIONS = new Set([
  'PUT /api/queues/:queueName/:jobId/retry',
  'PUT /api/queues/:queueName/retry/:queueStatus',
  'PUT /api/queues/:queueName/:jobId/clean',
  'PUT /api/queues/:queueName/clean/:queueStatus',
  'PUT /api/queues/:queueName/pause',
  'PUT /api/queues/:queueName/resume',
  'PUT /api/queues/pause',
  'PUT /api/queues/resume',
]);

/** What a refusal says the dashboard allows. */
const ALLOWED_WORDS = 'retry a failed job, remove a job, clean, pause and resume';

/**
 * An onRequest hook of the dashboard, below `path`, refusing (E_NOT_ALLOWED, 403) every request
 * but a read and the ALLOWED_ACTIONS, by the route bull-board matched (so no spelling of a path
 * reaches another handler). A retry is of failed jobs only: retrying a completed run's job would
 * run it again. The refusal is sent from the hook: bull-board's own error handler, which its
 * routes have, would make a thrown one a 500.
 */
export function dashboardActionGuard(path: string, queues: readonly Queue[]): (request: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  return async (request, reply) => {
    const refused = await refusal(request, path, queues);
    if (refused === undefined) return;
    const body: ErrorBody = { error: 'E_NOT_ALLOWED', message: `the queue dashboard does not allow ${refused}: its actions are ${ALLOWED_WORDS}` };
    return reply.code(errorSpec('E_NOT_ALLOWED').status).send(body);
  };
}

/** What the dashboard refuses of this request, in words; undefined when it allows it. */
async function refusal(request: FastifyRequest, path: string, queues: readonly Queue[]): Promise<string | undefined> {
  if (request.method === 'GET' || request.method === 'HEAD') return undefined;
  const route = `${request.method} ${request.routeOptions.url?.slice(path.length)}`;
  if (!ALLOWED_ACTIONS.has(route)) return route;
  const params = request.params as { queueName?: string; jobId?: string; queueStatus?: string };
  if (route.endsWith('/retry/:queueStatus') && params.queueStatus !== 'failed') return `retrying ${excerpt(params.queueStatus ?? '')} jobs`;
  if (!route.endsWith('/:jobId/retry')) return undefined;
  const queue = queues.find((q) => q.name === params.queueName);
  const state = queue && params.jobId ? await findJob(queue, params.jobId).then((job) => job?.getState()) : undefined;
  return state !== undefined && state !== 'failed' ? `retrying a ${state} job` : undefined;
}
