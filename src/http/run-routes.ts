import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { isSettled, judgeRun, type Verdict, type RunListener, type DryRunReport, readManifest, type Manifest } from '../scoring/index.js';
import { runNotFound, type RunQueueCalls, type RunStatus, type RunSubmission } from '../queue/index.js';
import type { KnownRuns } from '../run-index/index.js';
import { parseLocation, type Storage } from '../storage/index.js';
import { idempotencyOf, REPLAYED_HEADER } from './idempotency-key.js';
import { cancelRunSchema, getRunSchema, judgeRunSchema, listRunsSchema, resumeRunSchema, submitRunSchema } from './run-operations.js';
import type { runStatusSchema } from './run-schemas.js';

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

/** Submissions as sent, before their route's schema parsed them (see `POST /runs`). */
const sentBodies = new WeakMap<FastifyRequest, unknown>();

/** The run API: `POST /runs`, `GET /runs`, `GET /runs/:id`, `DELETE /runs/:id`, `POST /runs/:id/resume`, `POST /runs/:id/accept`, `POST /runs/:id/reject`. */
export const runRoutes: FastifyPluginCallbackZod<RunRoutesDeps> = (app, { runs, known, storage, dryRun, listener }, done) => {
  app.post(
    '/runs',
    {
      schema: submitRunSchema,
      // The submission as sent, not as parsed: options hold only what the client set, the worker defaults the rest.
      preValidation: (request, _reply, done) => {
        sentBodies.set(request, request.body);
        done();
      },
    },
    async (request, reply) => {
      const sent = sentBodies.get(request) as RunSubmission & { dryRun?: boolean };
      const idempotency = idempotencyOf(request.headers, request.body, sent);
      const { dryRun: dry, ...submission } = sent;
      // A dry run enqueues nothing, so its key keeps nothing either.
      if (dry) return reply.code(200).send({ dryRun: true as const, ...(await dryRun(submission)) });
      const { runId, created, resumed, replayed } = await runs.enqueue({ ...submission, trigger: { kind: 'api' } }, { idempotency });
      if (replayed) {
        request.log.info({ runId, created }, 'submission answered again for its Idempotency-Key');
        reply.header(REPLAYED_HEADER, 'true');
      } else request.log.info({ runId, created, resumed }, 'run submitted');
      return reply.code(created ? 201 : 200).send({ runId, created, ...(resumed ? { resumed } : {}) });
    },
  );

  app.get('/runs', { schema: listRunsSchema }, async (request) => {
    const { state, pipeline, limit, offset } = request.query;
    return { runs: (await known.list({ limit, offset, state, pipeline })).map(shown) };
  });

  app.get('/runs/:id', { schema: getRunSchema }, async (request) => {
    const { id } = request.params;
    const status = await known.get(id);
    if (!status) throw runNotFound(id);
    const manifest = isSettled(status.state) ? await manifestOf(storage, status, request.log) : undefined;
    return { ...shown(status), ...(manifest ? { manifest, outputs: manifest.outputs.map((o) => o.location) } : {}) };
  });

  app.delete('/runs/:id', { schema: cancelRunSchema }, async (request) => {
    const { id } = request.params;
    const status = await runs.cancel(id);
    request.log.info({ runId: id }, 'run cancelled');
    return shown(status);
  });

  app.post('/runs/:id/resume', { schema: resumeRunSchema }, async (request) => {
    const { id } = request.params;
    const body = await runs.resume(id, request.body ?? {});
    request.log.info({ runId: id }, 'run resumed');
    return body;
  });

  /** Judges a held run; the answer is the manifest as judged now, and whether it had been judged so before. */
  const judge = async (request: FastifyRequest, id: string, verdict: Verdict, why: string | undefined) => {
    // A held `score` run is judged too: its folder is known without the queue.
    const status = await known.get(id);
    if (!status) throw runNotFound(id);
    // The bearer token names nobody: the manifest says the API judged it.
    const judged = await judgeRun(storage, parseLocation(status.folder), { verdict, by: JUDGED_BY_API, ...(why !== undefined && { why }) });
    if (!judged.already) {
      request.log.info({ runId: id, verdict }, 'held run judged');
      await runs.judged(judged.manifest);
      listener?.runEnded(judged.manifest);
    }
    return judged;
  };
  app.post('/runs/:id/accept', { schema: judgeRunSchema('accept') }, async (request) => {
    const { id } = request.params;
    const { manifest, already } = await judge(request, id, 'accept', request.body?.why);
    return { runId: id, already, state: manifest.state, accepted: manifest.accepted! };
  });
  app.post('/runs/:id/reject', { schema: judgeRunSchema('reject') }, async (request) => {
    const { id } = request.params;
    const { manifest, already } = await judge(request, id, 'reject', request.body?.why);
    return { runId: id, already, state: manifest.state, rejected: manifest.rejected! };
  });
  done();
};

/** A run's status as the API answers it (the compiler checks it against the answer's schema). */
function shown(status: RunStatus): z.output<typeof runStatusSchema> {
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
