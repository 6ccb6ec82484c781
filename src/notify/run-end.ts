import { z } from 'zod';
import { runOptionsSchema } from '../config/index.js';
import { describeTrigger, type Manifest, manifestSchema, runResult, runResultSchema, triggerPipeline } from '../scoring/index.js';
import { excerpt } from '../text-excerpt.js';

/** Bytes of a run's error message a delivery carries at most: a chat line, not a log. */
export const MESSAGE_BYTES = 500;
/** Bytes of the other texts of a run end at most: a pipeline name and a trigger's few words (it may name a file), a run folder. */
const PIPELINE_BYTES = 128;
const TRIGGER_BYTES = 512;
const FOLDER_BYTES = 4096;

const textOf = (maxBytes: number) => z.string().refine((text) => Buffer.byteLength(text) <= maxBytes, { message: `must be at most ${maxBytes} bytes` });

/**
 * What a webhook tells of a run end: the facts of its manifest a body is built from (see
 * webhookBody), each bounded. A delivery job carries these, not a body, and the worker that
 * attempts it builds the body from them once they are read through this schema: every text in
 * it has a rule or a bound, so nothing from Redis becomes free text in a signed body.
 */
export const runEndSchema = z
  .object({
    runId: runOptionsSchema.shape.runId.unwrap(),
    state: manifestSchema.shape.state,
    /** The pipeline that started the run, null for runs started by a person or script. */
    pipeline: textOf(PIPELINE_BYTES).nullable(),
    /** What started it, in a few words (describeTrigger). */
    trigger: textOf(TRIGGER_BYTES),
    startedAt: z.iso.datetime(),
    finishedAt: z.iso.datetime(),
    durationMs: z.number(),
    counts: z
      .object({ rowsIn: z.int().min(0), rowsScored: z.int().min(0), rowsQuarantined: z.int().min(0) })
      .strict()
      .nullable(),
    error: z
      .object({ code: z.string().regex(/^E_[A-Z_]{1,40}$/), message: textOf(MESSAGE_BYTES) })
      .strict()
      .nullable(),
    drift: z
      .object({ level: z.enum(['ok', 'warn', 'fail']) })
      .strict()
      .nullable(),
    /** What the run came to, as every view tells it (see RunResult): counts, drift verdict, shadow agreement, cap, acceptance. */
    result: runResultSchema,
    /** The run folder as the manifest writes it, `<out>/<runId>`; null for a run that has none. */
    folder: textOf(FOLDER_BYTES).nullable(),
  })
  .strict();
export type RunEnd = z.output<typeof runEndSchema>;

/**
 * The run end of a manifest, its texts cut to their bounds (the error message and the trigger may
 * quote a location of any length). Throws for a manifest no delivery can tell (a run id that breaks
 * the run-id rule, times that are none): such a run is no run of this deployment's.
 */
export function runEndOf(manifest: Manifest): RunEnd {
  const trigger = manifest.trigger ?? undefined;
  const pipeline = triggerPipeline(trigger);
  const c = manifest.counts;
  return runEndSchema.parse({
    runId: manifest.runId,
    state: manifest.state,
    pipeline: pipeline === undefined ? null : excerpt(pipeline, PIPELINE_BYTES),
    trigger: excerpt(describeTrigger(trigger), TRIGGER_BYTES),
    startedAt: manifest.startedAt,
    finishedAt: manifest.finishedAt,
    durationMs: manifest.durationMs,
    counts: c ? { rowsIn: c.rowsIn, rowsScored: c.rowsScored, rowsQuarantined: c.rowsQuarantined } : null,
    error: manifest.error ? { code: manifest.error.code, message: excerpt(manifest.error.message, MESSAGE_BYTES) } : null,
    drift: manifest.drift ? { level: manifest.drift.level } : null,
    result: runResult(manifest),
    folder: manifest.folder,
  });
}
