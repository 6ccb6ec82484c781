import type { z } from 'zod';
import { BODY_LIMIT_BYTES, errorBodySchema } from './http-errors.js';

/** The tags the document groups operations by. */
export const TAGS = {
  runs: 'runs',
  events: 'events',
  probes: 'probes',
} as const;

/**
 * One answer of a route, as its `schema.response` holds it: what it means, and its JSON body's
 * zod schema, which documents it (`/openapi.json`) and serializes it (an answer that does not fit
 * is a 500, never sent).
 */
export function answer<S extends z.ZodType>(description: string, schema: S) {
  return { description, content: { 'application/json': { schema } } };
}

/** An error answer: the catalogue's body (see errorBodySchema); the description names its codes. */
export function failure(description: string) {
  return answer(description, errorBodySchema);
}

/** The answers of every route behind the bearer token, besides its own. */
export const GUARDED = {
  401: failure('E_UNAUTHORIZED: credentials missing or refused'),
  429: failure('E_RATE_LIMITED: too many refused credentials from this client; try again after Retry-After seconds'),
  500: failure('E_INTERNAL: internal error; the server log has its details under the request id'),
};

/** The answers of a route that reads or writes the queue in Redis. */
export const QUEUED = {
  503: failure('E_REDIS_UNAVAILABLE: Redis did not answer; try again'),
};

/** The answers of a route taking a JSON body, besides its own 400 for a bad field. */
export const JSON_BODY = {
  413: failure(`E_USAGE: the body is over ${BODY_LIMIT_BYTES / 1024} KiB`),
  415: failure('E_USAGE: the body is not sent as JSON (content-type: application/json)'),
};
