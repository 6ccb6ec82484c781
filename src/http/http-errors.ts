import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { restate } from '../config/index.js';
import { BatchScorerError, errorSpec, UsageError, type ErrorCode } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import type { ServerAuth } from './auth.js';

/** The largest request body taken; a run submission is a few hundred bytes. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** One bad field of a request: its path as written in the request (`options.batchSize`), and what it must be. */
export interface FieldIssue {
  field: string;
  message: string;
}

/** The body of every error answer. */
export const errorBodySchema = z.object({
  /** The stable error code, as the CLI prints it (`E_USAGE`, `E_RUN_NOT_FOUND`, ...). */
  error: z.string(),
  message: z.string(),
  /** For E_USAGE: each bad field of the request. */
  issues: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
});
export type ErrorBody = z.output<typeof errorBodySchema>;

/** Issues an answer lists at most: a body of thousands of unknown fields must not be answered with thousands of issues. */
const MAX_ISSUES = 20;

/** A request refused for its content, naming each bad field (400 E_USAGE), the first MAX_ISSUES of them. */
export class RequestError extends UsageError {
  readonly issues: FieldIssue[];

  constructor(issues: FieldIssue[]) {
    const named = issues.slice(0, MAX_ISSUES).map((i) => ({ field: excerpt(i.field), message: excerpt(i.message) }));
    const more = issues.length - named.length;
    const shown = more > 0 ? [...named, { field: '…', message: `${more} more issue${more === 1 ? '' : 's'}: fix the ones above first` }] : named;
    super(shown.map((i) => `${i.field}: ${i.message}`).join('; '));
    this.issues = shown;
  }

  /** zod's issues as fields of the request; `where` is the part of the request they are in, for issues about all of it. */
  static fromZod(error: z.ZodError, where: string): RequestError {
    return new RequestError(
      error.issues.flatMap((issue) => {
        const path = issue.path.map(String);
        if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ field: [...path, key].join('.'), message: 'unknown field: remove it' }));
        return [{ field: path.length > 0 ? path.join('.') : where, message: restate(issue) }];
      }),
    );
  }
}

/**
 * Codes whose message is the server's business, not the caller's: its configuration, or a fault
 * whose details belong in the log.
 */
const SERVER_ONLY: readonly ErrorCode[] = ['E_CONFIG', 'E_INTERNAL'];

/**
 * Answers every error of the server in one shape: BatchScorerErrors by their code's status in the
 * catalogue (errors.ts), with their message; fastify's own refusals (a body too large, not JSON, of another media type) as
 * E_USAGE with their status; anything else as a 500 whose message says nothing of its cause,
 * logged with the request id so it can be found.
 */
export function installErrorHandling(app: FastifyInstance, auth: ServerAuth): void {
  app.setErrorHandler(async (err: FastifyError | BatchScorerError, request, reply) => {
    let status: number;
    let body: ErrorBody;
    if (err instanceof BatchScorerError && !SERVER_ONLY.includes(err.code)) {
      status = errorSpec(err.code).status;
      if (status >= 500) request.log.warn({ err }, 'request failed');
      body = { error: err.code, message: err.message, ...(err instanceof RequestError ? { issues: err.issues } : {}) };
    } else if (!(err instanceof BatchScorerError) && err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      status = err.statusCode;
      body = { error: 'E_USAGE', message: clientErrorMessage(err) };
    } else {
      request.log.error({ err }, 'request failed');
      status = 500;
      body = { error: 'E_INTERNAL', message: `internal error; the server log has its details under request id ${request.id}` };
    }
    return reply.code(status).send(body);
  });
  // Asked without credentials, an unknown path is refused like a known one: which paths exist is
  // no business of a caller without them (under /ui, the dashboard's login is asked for).
  app.setNotFoundHandler(
    {
      preHandler: (request: FastifyRequest, reply: FastifyReply) =>
        (request.url === '/ui' || request.url.startsWith('/ui/') ? auth.ui : auth.api)(request, reply),
    },
    async (request, reply) => reply.code(404).send({ error: 'E_NOT_FOUND', message: `no route ${request.method} ${excerpt(request.url.split('?')[0])}` }),
  );
}

/** Fastify's own client errors, said as what to change. */
function clientErrorMessage(err: FastifyError): string {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return `request body too large: send at most ${BODY_LIMIT_BYTES / 1024} KiB`;
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return 'send the body as JSON with content-type: application/json';
  return err.message;
}
