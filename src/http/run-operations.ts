import { z } from 'zod';
import { LIMITS } from '../config/index.js';
import type { Verdict } from '../scoring/index.js';
import { answer, failure, GUARDED, JSON_BODY, QUEUED, TAGS } from './api-responses.js';
import { idempotencyHeadersSchema, replayedHeaders } from './idempotency-key.js';
import {
  dryRunAnswerSchema,
  runAcceptedSchema,
  runCreatedSchema,
  runDetailSchema,
  runIdParamsSchema,
  runJudgementSchema,
  runListQuerySchema,
  runListSchema,
  runRejectedSchema,
  runResumedSchema,
  runResumeSchema,
  runStatusSchema,
  runSubmissionSchema,
} from './run-schemas.js';

/**
 * The run API's operations, as its routes (run-routes.ts) declare them: what each takes, checked
 * before its handler runs, and every answer it gives, which `/openapi.json` documents.
 */

/** The answers of a route about one run, besides its own. */
const ABOUT_A_RUN = {
  404: failure('E_RUN_NOT_FOUND: no such run'),
  ...GUARDED,
  ...QUEUED,
};

export const submitRunSchema = {
  operationId: 'submitRun',
  summary: 'Enqueue a run (the fields and checks of `batch-scorer enqueue`)',
  tags: [TAGS.runs],
  headers: idempotencyHeadersSchema,
  body: runSubmissionSchema,
  response: {
    201: { ...answer('enqueued', runCreatedSchema), headers: replayedHeaders },
    200: {
      ...answer(
        'a run of this id is on the queue already: not enqueued again (RunCreated); or, with dryRun, the plan (DryRunReport)',
        z.union([runCreatedSchema, dryRunAnswerSchema]),
      ),
      headers: replayedHeaders,
    },
    400: failure('E_USAGE: a bad field, each named in issues (a bad Idempotency-Key header is named so)'),
    403: failure('E_NOT_ALLOWED: the input, output or service is outside the deployment policy (INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS)'),
    409: failure(
      'E_RUN_EXISTS: the run id is taken by a run that cannot be replaced; or E_IDEMPOTENCY_IN_PROGRESS: another request with this Idempotency-Key did not answer within 10 s (send it again)',
    ),
    422: failure(
      `E_LIMIT: the input makes more segments than ${LIMITS.segments.setting} at its segmentRows (the message names the smallest segmentRows that fits), checked before any job exists; or a dry run passed ${LIMITS.dryRunSeconds.setting} or ${LIMITS.dryRunBytes.setting} and was stopped. E_IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was sent within 24 h with another submission. With dryRun, the input's or the model's own errors (E_INPUT_NOT_FOUND, E_INPUT, E_MODEL_NOT_FOUND, E_COLUMNS...)`,
    ),
    502: failure('with dryRun: the model service did not answer as one (E_SERVICE_UNREACHABLE, E_SERVICE_URL, E_SERVICE_FATAL...)'),
    ...JSON_BODY,
    ...GUARDED,
    ...QUEUED,
  },
};

export const listRunsSchema = {
  operationId: 'listRuns',
  summary: 'The most recent runs, newest first: those on the queue and those whose run folders are under OUTPUT_ROOTS (score runs too)',
  tags: [TAGS.runs],
  querystring: runListQuerySchema,
  response: {
    200: answer('the runs', runListSchema),
    400: failure('E_USAGE: a bad query parameter, each named in issues'),
    ...GUARDED,
    ...QUEUED,
  },
};

export const getRunSchema = {
  operationId: 'getRun',
  summary: "A run's state and progress; once finished, its manifest and output locations",
  tags: [TAGS.runs],
  params: runIdParamsSchema,
  response: {
    200: answer('the run', runDetailSchema),
    400: failure('E_USAGE: a bad run id, named in issues'),
    ...ABOUT_A_RUN,
  },
};

export const cancelRunSchema = {
  operationId: 'cancelRun',
  summary: 'Cancel a waiting or active run: it is cancelling while its jobs stop (within seconds), then cancelled',
  tags: [TAGS.runs],
  params: runIdParamsSchema,
  response: {
    200: answer('the run, cancelling (or cancelled when none of its jobs runs)', runStatusSchema),
    400: failure('E_USAGE: a bad run id, named in issues'),
    409: failure('E_RUN_CONFLICT: the run has finished'),
    ...ABOUT_A_RUN,
  },
};

export const resumeRunSchema = {
  operationId: 'resumeRun',
  summary: 'Resume a failed, cancelled or expired run, keeping the segments it finished, under the caps the body gives (none: uncapped)',
  tags: [TAGS.runs],
  params: runIdParamsSchema,
  body: runResumeSchema.optional(),
  response: {
    200: answer('enqueued again', runResumedSchema),
    400: failure('E_USAGE: a bad run id or cap, each named in issues'),
    403: failure("E_NOT_ALLOWED: the run's input, output or service is outside the deployment policy"),
    409: failure('E_RUN_CONFLICT: the run is not failed, cancelled or expired'),
    ...JSON_BODY,
    ...ABOUT_A_RUN,
  },
};

const JUDGED = {
  accept: {
    operationId: 'acceptRun',
    summary:
      'Accept a run held by its drift gate (state held, E_DRIFT): its state becomes succeeded, its manifest keeping the error under accepted (by: api, and the why given), and its _SUCCESS is written',
    answer: answer('accepted now, or already (nothing changed)', runAcceptedSchema),
  },
  reject: {
    operationId: 'rejectRun',
    summary: 'Reject a run held by its drift gate: its state becomes failed for good, its manifest saying who rejected it (by: api), when and why; no _SUCCESS',
    answer: answer('rejected now, or already (nothing changed)', runRejectedSchema),
  },
} as const;

/** `POST /runs/:id/accept` or `/reject`. */
export function judgeRunSchema<V extends Verdict>(verdict: V) {
  const { operationId, summary, answer: judged } = JUDGED[verdict];
  return {
    operationId,
    summary,
    tags: [TAGS.runs],
    params: runIdParamsSchema,
    body: runJudgementSchema.optional(),
    response: {
      200: judged as (typeof JUDGED)[V]['answer'],
      400: failure('E_USAGE: a bad run id or body, each field named in issues'),
      403: failure("E_NOT_ALLOWED: the run's folder is outside the deployment policy"),
      409: failure('E_RUN_CONFLICT: the run is not held (or has not finished)'),
      ...JSON_BODY,
      ...ABOUT_A_RUN,
    },
  };
}
