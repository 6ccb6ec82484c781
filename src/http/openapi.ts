import { LIMITS } from '../config/index.js';
import { z } from 'zod';
import { dryRunReportSchema } from '../scoring/index.js';
import { s3EventSchema } from '../triggers/index.js';
import { TOOL } from '../version.js';
import { eventRunsSchema } from './event-routes.js';
import { errorBodySchema } from './http-errors.js';
import { IDEMPOTENCY_HEADER, MAX_IDEMPOTENCY_KEY_LENGTH, REPLAYED_HEADER } from './idempotency-key.js';
import {
  runAcceptedSchema,
  runJudgementSchema,
  runRejectedSchema,
  runCreatedSchema,
  runDetailSchema,
  runListQuerySchema,
  runListSchema,
  runResumedSchema,
  runResumeSchema,
  runStatusSchema,
  runSubmissionSchema,
} from './run-schemas.js';

/** A JSON Schema for OpenAPI 3.1 (JSON Schema 2020-12): requests as clients write them, answers as the server writes them. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return rest;
}

const json = (ref: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } });
const answer = (description: string, ref: string) => ({ description, content: json(ref) });
const failure = (description: string) => answer(description, 'Error');

const runId = { name: 'id', in: 'path', required: true, schema: jsonSchema(runStatusSchema.shape.runId, 'input') };
const common = {
  '401': failure('credentials missing or refused'),
  '429': failure('too many refused credentials from this client (E_RATE_LIMITED): try again after Retry-After seconds'),
  '503': failure('Redis did not answer'),
  '500': failure('internal error'),
};

const idempotencyKey = {
  name: IDEMPOTENCY_HEADER,
  in: 'header',
  required: false,
  description:
    'sent again within 24 h with the same submission (the same fields, in any order), answers the first answer again (status and body: the same runId) and starts no other run; with another submission, 422. One per deployment; dry runs keep nothing',
  schema: { type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, pattern: '^[\\x20-\\x7e]+$' },
};
const replayed = {
  [REPLAYED_HEADER]: { description: 'true when this is the first answer of the Idempotency-Key given again', schema: { type: 'string', enum: ['true'] } },
};

/** The OpenAPI 3.1 document served at `/openapi.json`, generated from the zod schemas the routes parse with. */
export function openApiDocument(): Record<string, unknown> {
  const query = jsonSchema(runListQuerySchema, 'input') as { properties: Record<string, Record<string, unknown>> };
  return {
    openapi: '3.1.0',
    info: { title: 'batch-scorer run API', version: TOOL.version },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API_TOKEN' } },
      schemas: {
        RunSubmission: jsonSchema(runSubmissionSchema, 'input'),
        RunCreated: jsonSchema(runCreatedSchema, 'output'),
        DryRunReport: jsonSchema(dryRunReportSchema.extend({ dryRun: z.literal(true) }), 'output'),
        RunStatus: jsonSchema(runStatusSchema, 'output'),
        RunDetail: jsonSchema(runDetailSchema, 'output'),
        RunList: jsonSchema(runListSchema, 'output'),
        RunResumed: jsonSchema(runResumedSchema, 'output'),
        RunResume: jsonSchema(runResumeSchema, 'input'),
        RunAccepted: jsonSchema(runAcceptedSchema, 'output'),
        RunRejected: jsonSchema(runRejectedSchema, 'output'),
        RunJudgement: jsonSchema(runJudgementSchema, 'input'),
        S3Event: jsonSchema(s3EventSchema, 'input'),
        EventRuns: jsonSchema(eventRunsSchema, 'output'),
        Error: jsonSchema(errorBodySchema, 'output'),
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/runs': {
        post: {
          summary: 'Enqueue a run (the fields and checks of `batch-scorer enqueue`)',
          parameters: [idempotencyKey],
          requestBody: { required: true, content: json('RunSubmission') },
          responses: {
            '201': { ...answer('enqueued', 'RunCreated'), headers: replayed },
            '200': {
              description: 'a run of this id is on the queue already: not enqueued again (RunCreated); or, with dryRun, the plan (DryRunReport)',
              headers: replayed,
              content: {
                'application/json': { schema: { oneOf: [{ $ref: '#/components/schemas/RunCreated' }, { $ref: '#/components/schemas/DryRunReport' }] } },
              },
            },
            '400': failure('a bad field, each named in issues (a bad Idempotency-Key header is named so)'),
            '403': failure('the input, output or service is outside the deployment policy (INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS)'),
            '409': failure(
              'the run id is taken by a run that cannot be replaced; or E_IDEMPOTENCY_IN_PROGRESS: another request with this Idempotency-Key did not answer within 10 s (send it again)',
            ),
            '422': failure(
              `E_LIMIT: the input makes more segments than ${LIMITS.segments.setting} at its segmentRows (the message names the smallest segmentRows that fits), checked before any job exists; or a dry run passed ${LIMITS.dryRunSeconds.setting} or ${LIMITS.dryRunBytes.setting} and was stopped. E_IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was sent within 24 h with another submission`,
            ),
            '413': failure('body too large'),
            ...common,
          },
        },
        get: {
          summary: 'The most recent runs, newest first: those on the queue and those whose run folders are under OUTPUT_ROOTS (score runs too)',
          parameters: Object.entries(query.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })),
          responses: { '200': answer('the runs', 'RunList'), '400': failure('a bad query parameter'), ...common },
        },
      },
      '/runs/{id}': {
        parameters: [runId],
        get: {
          summary: "A run's state and progress; once finished, its manifest and output locations",
          responses: { '200': answer('the run', 'RunDetail'), '404': failure('no such run'), ...common },
        },
        delete: {
          summary: 'Cancel a waiting or active run: it is cancelling while its jobs stop (within seconds), then cancelled',
          responses: {
            '200': answer('the run, cancelling (or cancelled when none of its jobs runs)', 'RunStatus'),
            '404': failure('no such run'),
            '409': failure('the run has finished'),
            ...common,
          },
        },
      },
      '/runs/{id}/resume': {
        parameters: [runId],
        post: {
          summary: 'Resume a failed, cancelled or expired run, keeping the segments it finished, under the caps the body gives (none: uncapped)',
          requestBody: { required: false, content: json('RunResume') },
          responses: {
            '200': answer('enqueued again', 'RunResumed'),
            '400': failure('a bad cap, named in issues'),
            '403': failure("the run's input, output or service is outside the deployment policy"),
            '404': failure('no such run'),
            '409': failure('the run is not failed, cancelled or expired'),
            ...common,
          },
        },
      },
      '/runs/{id}/accept': {
        parameters: [runId],
        post: {
          summary:
            'Accept a run held by its drift gate (state held, E_DRIFT): its state becomes succeeded, its manifest keeping the error under accepted (by: api, and the why given), and its _SUCCESS is written',
          requestBody: { required: false, content: json('RunJudgement') },
          responses: {
            '200': answer('accepted now, or already (nothing changed)', 'RunAccepted'),
            '400': failure('a bad run id or body, named in issues'),
            '403': failure("the run's folder is outside the deployment policy"),
            '404': failure('no such run'),
            '409': failure('the run is not held (or has not finished)'),
            ...common,
          },
        },
      },
      '/runs/{id}/reject': {
        parameters: [runId],
        post: {
          summary:
            'Reject a run held by its drift gate: its state becomes failed for good, its manifest saying who rejected it (by: api), when and why; no _SUCCESS',
          requestBody: { required: false, content: json('RunJudgement') },
          responses: {
            '200': answer('rejected now, or already (nothing changed)', 'RunRejected'),
            '400': failure('a bad run id or body, named in issues'),
            '403': failure("the run's folder is outside the deployment policy"),
            '404': failure('no such run'),
            '409': failure('the run is not held (or has not finished)'),
            ...common,
          },
        },
      },
      '/events/s3': {
        post: {
          summary:
            "S3 event notifications (AWS, MinIO's webhook, the s3:TestEvent): one run per new file version under a file-drop pipeline's prefix, however often it is notified",
          requestBody: { required: true, content: json('S3Event') },
          responses: {
            '200': answer('the runs of the notified files (created: false for a file version seen before), and how many records started none', 'EventRuns'),
            '400': failure('a bad field, each named in issues'),
            '403': failure("a notified file's run would reach outside the deployment policy"),
            '413': failure('body too large'),
            ...common,
          },
        },
      },
      '/metrics': {
        get: { summary: 'Prometheus metrics', responses: { '200': { description: 'the text exposition format', content: { 'text/plain': {} } } } },
      },
      '/healthz': { get: { summary: 'The process is up', security: [], responses: { '200': { description: 'up' } } } },
      '/readyz': {
        get: {
          summary: 'Redis answers, and the server is not shutting down',
          security: [],
          responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } },
        },
      },
    },
  };
}
