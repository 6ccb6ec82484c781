import path from 'node:path';
import { z } from 'zod';
import { RUN_PRIORITIES, runOptionsSchema, checkedText, parseRunInput } from '../config/index.js';
import {
  dryRunReportSchema,
  manifestSchema,
  JUDGEMENT_WHY_CHARS,
  FORMER_STATE_NAMES,
  RUN_STATES,
  runStateSchema,
  stateNamed,
  runResultSchema,
  runTriggerSchema,
} from '../scoring/index.js';
import { RETENTION } from '../queue/index.js';

import { parseModelRef } from '../service/index.js';
import { UsageError } from '../errors.js';
import { hasScheme, parseLocation, type Location } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { pipelineNameSchema } from '../triggers/index.js';

/**
 * The request and answer shapes of the run API, from the schemas the CLI and the scoring core use:
 * the routes declare them, and `/openapi.json` is generated from the routes.
 */

/**
 * A location sent to the server: s3://, file:// or an absolute path. `enqueue` makes a relative
 * path absolute in the folder it runs in; over the API it would mean serve's and the workers'
 * working folders, which the client knows nothing of, so it is refused.
 */
function serverLocation(text: string): Location {
  const location = parseLocation(text);
  if (!hasScheme(text) && !path.isAbsolute(text)) {
    throw new UsageError(
      `'${excerpt(text)}' is a relative path, which the server would resolve in its own working folder: an absolute path (or file:///absolute/path) or an s3:// URL is needed`,
    );
  }
  return location;
}

/** An input sent to the server: a location (see serverLocation), or a PostgreSQL database URL without a password. */
function serverInput(text: string): unknown {
  return parseRunInput(text).kind === 'database' ? undefined : serverLocation(text);
}

/** `POST /runs`: what `enqueue` takes (see validateSubmission), field by field; local paths absolute. */
export const runSubmissionSchema = z
  .object({
    /** The input: an absolute local path (seen by the workers), file:///path or s3://bucket/key; or a database, postgresql://user@host:5432/db. */
    input: checkedText(serverInput).describe(
      'a file, a folder or prefix ending in /, or a glob: an absolute local path (seen by the workers), file:///path or s3://bucket/key; or a PostgreSQL database, postgresql://user@host:5432/db (no password: the workers take PGPASSWORD or ~/.pgpass), with options.table or options.query',
    ),
    model: checkedText(parseModelRef).describe('project/model or project/model.version, e.g. mindsdb/home_rentals_model'),
    out: checkedText(serverLocation).describe(
      'the output folder (an absolute local path, file:///path or s3://bucket/prefix/); the run writes into <out>/<runId>/',
    ),
    /** Run options as `enqueue` flags set them (`batchSize` is `--batch-size`); what is not set is the worker's to default. */
    options: runOptionsSchema.optional(),
    /** Plan the input and score a few canary batches, enqueue nothing: answers what the run would do (see DryRunReport). */
    dryRun: z.boolean().optional().describe('plan the input and score a few canary batches; enqueue nothing and answer the plan and estimate'),
  })
  .strict();

/**
 * The `GET /runs` state filter: a state (see RUN_STATES), or a name the API answered before this
 * release (FORMER_STATE_NAMES: `completed`, `waiting`, `active`), accepted for one more release.
 */
export const stateFilterSchema = z
  .enum([...RUN_STATES, ...(Object.keys(FORMER_STATE_NAMES) as [string, ...string[]])])
  .transform((name) => stateNamed(name)!)
  .describe(`one of ${RUN_STATES.join(', ')}; ${Object.keys(FORMER_STATE_NAMES).join(', ')} are former names, accepted until the next release`);

/** The deepest `GET /runs?offset=`: as far as the queue keeps runs of one state (see RETENTION), so a page stays a bounded read. */
export const MAX_LIST_OFFSET = RETENTION.runs.removeOnFail.count;

/** `GET /runs` query. */
export const runListQuerySchema = z
  .object({
    state: stateFilterSchema.optional(),
    /** Only the runs this pipeline of `jobs/*.yaml` started. */
    pipeline: pipelineNameSchema.optional().describe('only the runs this pipeline of jobs/*.yaml started'),
    limit: z.coerce.number().int().min(1).max(1000).default(20),
    /** Matching runs skipped first, newest first: the page's start. */
    offset: z.coerce.number().int().min(0).max(MAX_LIST_OFFSET).default(0).describe('matching runs skipped first, newest first: where the page starts'),
  })
  .strict();

/** A run id in a path: the shape `--run-id` takes. */
export const runIdParamsSchema = z.object({ id: runOptionsSchema.shape.runId.unwrap() }).strict();

/** `POST /runs` with `dryRun`: the plan and estimate (see DryRunReport), marked as a dry run's. */
export const dryRunAnswerSchema = dryRunReportSchema.extend({ dryRun: z.literal(true) });

export const runCreatedSchema = z.object({
  runId: z.string(),
  /** false: a run of this id was on the queue already, and was not enqueued again. */
  created: z.boolean(),
  /** true: a failed or cancelled run of this id was enqueued again, keeping the segments it finished. */
  resumed: z.boolean().optional(),
});

export const runResumedSchema = z.object({ runId: z.string(), resumed: z.literal(true) });

/** `POST /runs/:id/resume`'s body, optional: the caps the resumed run goes on under (none given: uncapped). */
export const runResumeSchema = runOptionsSchema.pick({ maxRequests: true, maxRows: true, deadline: true }).strict();

/** `POST /runs/:id/accept` and `/reject`'s body, optional: why, kept in the manifest. */
export const runJudgementSchema = z
  .object({ why: z.string().min(1).max(JUDGEMENT_WHY_CHARS).optional().describe('why the run is judged so, kept in its manifest') })
  .strict();

/** `POST /runs/:id/accept`: the run's state now, who accepted it, when and why, and whether it had been accepted before (nothing changed then). */
export const runAcceptedSchema = z.object({ runId: z.string(), already: z.boolean(), state: runStateSchema, accepted: manifestSchema.shape.accepted.unwrap() });

/** `POST /runs/:id/reject`: the run's state now, who rejected it, when and why, and whether it had been rejected before. */
export const runRejectedSchema = z.object({ runId: z.string(), already: z.boolean(), state: runStateSchema, rejected: manifestSchema.shape.rejected.unwrap() });

const progressSchema = z.object({
  rowsDone: z.int(),
  rowsTotal: z.int(),
  rowsQuarantined: z.int(),
  segmentsDone: z.int(),
  segmentsTotal: z.int(),
  rowsPerSecond: z.number(),
  etaSeconds: z.number().nullable(),
});

/** A run as `status --json` shows it. */
export const runStatusSchema = z.object({
  runId: z.string(),
  state: runStateSchema,
  progress: progressSchema.optional(),
  /** How its last attempt ended, once it has (see RunResult): counts, error, drift verdict, shadow agreement, cap, acceptance. */
  result: runResultSchema.optional(),
  /** The reason the queue kept for a run job that failed without a result (it stalled past its limit). */
  failedReason: z.string().optional(),
  attempts: z.int(),
  /** The run folder, `<out>/<runId>`. */
  folder: z.string(),
  input: z.string(),
  model: z.string(),
  out: z.string(),
  /** The run options the submission set. */
  options: z.record(z.string(), z.unknown()),
  /** How soon workers take the run's segments: its `priority` option, `normal` when it set none. */
  priority: z.enum(RUN_PRIORITIES),
  /** What started the run (cli, api, schedule, event, poll); absent for runs of releases that kept none. */
  trigger: runTriggerSchema.optional(),
  /** The `jobs/*.yaml` pipeline that started the run, if one did. */
  pipeline: z.string().optional(),
  enqueuedAt: z.string(),
  finishedAt: z.string().optional(),
});

/** `GET /runs/:id`: the run, and once it has finished, its manifest and the locations of its output files. */
export const runDetailSchema = runStatusSchema.extend({
  manifest: manifestSchema.optional(),
  outputs: z.array(z.string()).optional(),
});

export const runListSchema = z.object({ runs: z.array(runStatusSchema) });
