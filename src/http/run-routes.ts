import { type DryRunReport, isSettled, judgeRun, type Manifest, readManifest, type RunListener, type Verdict } from '../scoring/index.js';
import type { FastifyBaseLogger, FastifyPluginCallback, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { runNotFound, type RunQueueCalls, type RunStatus, type RunSubmission } from '../queue/index.js';
import type { KnownRuns } from '../run-index/index.js';
import { parseLocation, type Storage } from '../storage/index.js';
import { parseRequest } from './http-errors.js';
import { idempotencyOf, REPLAYED_HEADER } from './idempotency-key.js';
import type {
  runAcceptedSchema,
  runRejectedSchema,
  runCreatedSchema,
  runDetailSchema,
  runListSchema,
  runResumedSchema,
  runStatusSchema,
} from './run-schemas.js';
import { runIdParamsSchema, runJudgementSchema, runListQuerySchema, runResumeSchema, runSubmissionSchema } from './run-schemas.js';

/** `accepted.by` (or `rejected.by`) of a run judged over the API, whose bearer token names no one. */
const JUDGED_BY_API = 'api';

export interface RunRoutesDeps {
  runs: RunQueueCalls;
  /** The runs listed and shown: the queue's and those of the run folders, merged (see knownRuns). */
  known: KnownRuns;
  /** `POST /runs` with `dryRun`: plans the submission and scores a few canary batches, enqueueing nothing. */
  dryRun: (submission: RunSubmission) => Promise<DryRunReport>;
  /** Where run folders are read from (their manifests). */
  storage: Storage;
  /** Hears a held run end when it is judged (webhooks, lineage), as workers' listeners hear runs end. */
  listener?: RunListener;
}

/** The run API: `POST /runs`, `GET /runs`, `GET /runs/:id`, `DELETE /runs/:id`, `POST /runs/:id/resume`, `POST /runs/:id/accept`, `POST /runs/:id/reject`. */
export const runRoutes: FastifyPluginCallback<RunRoutesDeps> = (app, { runs, known, storage, dryRun, listener }, done) => {
  app.post('/runs', async (request, reply) => {
    const parsed = parseRequest(runSubmissionSchema, request.body, 'body');
    const idempotency = idempotencyOf(request.headers, parsed, request.body);
    // The submission as sent, not as parsed: options hold only what the client set, the worker defaults the rest.
    const { dryRun: dry, ...submission } = request.body as RunSubmission & { dryRun?: boolean };
    // A dry run enqueues nothing, so its key keeps nothing either.
    if (dry) return reply.code(200).send({ dryRun: true, ...(await dryRun(submission)) });
    const { runId, created, resumed, replayed } = await runs.enqueue({ ...submission, trigger: { kind: 'api' } }, { idempotency });
    if (replayed) {
      request.log.info({ runId, created }, 'submission answered again for its Idempotency-Key');
      reply.header(REPLAYED_HEADER, 'true');
    } else request.log.info({ runId, created, resumed }, 'run submitted');
    const body: z.input<typeof runCreatedSchema> = { runId, created, ...(resumed ? { resumed } : {}) };
    return reply.code(created ? 201 : 200).send(body);
  });

  app.get('/runs', async (request) => {
    const { state, pipeline, limit, offset } = parseRequest(runListQuerySchema, request.query, 'query');
    const body: z.input<typeof runListSchema> = { runs: (await known.list({ limit, offset, state, pipeline })).map(shown) };
    return body;
  });

  app.get('/runs/:id', async (request) => {
    const { id } = parseRequest(runIdParamsSchema, request.params, 'path');
    const status = await known.get(id);
    if (!status) throw runNotFound(id);
    const manifest = isSettled(status.state) ? await manifestOf(storage, status, request.log) : undefined;
    const body: z.input<typeof runDetailSchema> = {
      ...shown(status),
      ...(manifest ? { manifest, outputs: manifest.outputs.map((o) => o.location) } : {}),
    };
    return body;
  });

  app.delete('/runs/:id', async (request) => {
    const { id } = parseRequest(runIdParamsSchema, request.params, 'path');
    const status = await runs.cancel(id);
    request.log.info({ runId: id }, 'run cancelled');
    return shown(status);
  });

  app.post('/runs/:id/resume', async (request) => {
    const { id } = parseRequest(runIdParamsSchema, request.params, 'path');
    const caps = parseRequest(runResumeSchema, request.body ?? {}, 'body');
    const body: z.input<typeof runResumedSchema> = await runs.resume(id, caps);
    request.log.info({ runId: id }, 'run resumed');
    return body;
  });

  const judge = (verdict: Verdict) => async (request: FastifyRequest) => {
    const { id } = parseRequest(runIdParamsSchema, request.params, 'path');
    const { why } = parseRequest(runJudgementSchema, request.body ?? {}, 'body');
    // A held `score` run is judged too: its folder is known without the queue.
    const status = await known.get(id);
    if (!status) throw runNotFound(id);
    // The bearer token names nobody: the manifest says the API judged it.
    const { manifest, already } = await judgeRun(storage, parseLocation(status.folder), { verdict, by: JUDGED_BY_API, ...(why !== undefined && { why }) });
    if (!already) {
      request.log.info({ runId: id, verdict }, 'held run judged');
      await runs.judged(manifest);
      listener?.runEnded(manifest);
    }
    return verdict === 'accept'
      ? ({ runId: id, already, state: manifest.state, accepted: manifest.accepted! } satisfies z.input<typeof runAcceptedSchema>)
      : ({ runId: id, already, state: manifest.state, rejected: manifest.rejected! } satisfies z.input<typeof runRejectedSchema>);
  };
  app.post('/runs/:id/accept', judge('accept'));
  app.post('/runs/:id/reject', judge('reject'));
  done();
};

/** A run's status as the API answers it (the compiler checks it against the answer's schema). */
function shown(status: RunStatus): z.input<typeof runStatusSchema> {
  return status;
}

/**
 * A finished run's manifest, or undefined when it has none (it failed before it had a folder) or
 * it cannot be read: the status is still worth answering, and the log says what is wrong.
 */
async function manifestOf(storage: Storage, status: RunStatus, log: FastifyBaseLogger): Promise<Manifest | undefined> {
  try {
    return await readManifest(storage, parseLocation(status.folder));
  } catch (err) {
    log.warn({ runId: status.runId, err }, 'manifest not readable');
    return undefined;
  }
}
