import { z } from 'zod';

/** One version of a stored object, as a file drop names it: a new version of a key is another file. */
export const objectVersionSchema = z.object({
  /** `s3://bucket/key` (the key decoded) or a local path. */
  location: z.string(),
  /** S3's ETag without quotes; for a local file, `<size>-<mtime ms>`. */
  etag: z.string(),
  /** S3's version id, in a bucket with versioning. */
  versionId: z.string().optional(),
  size: z.number().optional(),
});
export type ObjectVersion = z.output<typeof objectVersionSchema>;

/**
 * What started a run, kept in its job data, `_work/run.json` and manifest: a person or script
 * (`cli`: `score`, `enqueue` or `rescore`; `api`: `POST /runs`), or a declared pipeline of `jobs/*.yaml`
 * (`schedule`: its scheduler fired; `event`: an S3 event notification; `poll`: `watch` found the
 * file). Not part of the run's fingerprint: a resume keeps the trigger of the run's start.
 */
export const runTriggerSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('cli'), command: z.enum(['score', 'enqueue', 'rescore']) }),
  z.object({ kind: z.literal('api') }),
  z.object({
    kind: z.literal('schedule'),
    pipeline: z.string(),
    /** The time the scheduler fired for (ISO 8601, UTC), whatever time the run was taken. */
    fireTime: z.string(),
    /** The cron expression and time zone it fired by. */
    cron: z.string(),
    tz: z.string(),
  }),
  z.object({
    kind: z.literal('event'),
    pipeline: z.string(),
    object: objectVersionSchema,
    /** The event's name as sent (`ObjectCreated:Put`, `s3:ObjectCreated:Put`) and its time. */
    eventName: z.string(),
    eventTime: z.string().optional(),
  }),
  z.object({
    kind: z.literal('poll'),
    pipeline: z.string(),
    object: objectVersionSchema,
    /** When `watch` found it. */
    foundAt: z.string(),
  }),
]);
export type RunTrigger = z.output<typeof runTriggerSchema>;

/** The pipeline that started a run, if one did. */
export function triggerPipeline(trigger: RunTrigger | undefined): string | undefined {
  return trigger && 'pipeline' in trigger ? trigger.pipeline : undefined;
}

/** A trigger in a few words, as `status` and the run pages show it: `schedule nightly-rentals (2026-11-23T02:00:00.000Z)`. */
export function describeTrigger(trigger: RunTrigger | undefined): string {
  if (!trigger) return 'unknown';
  switch (trigger.kind) {
    case 'cli':
      return `cli (${trigger.command})`;
    case 'api':
      return 'api (POST /runs)';
    case 'schedule':
      return `schedule ${trigger.pipeline} (${trigger.fireTime})`;
    case 'event':
      return `event ${trigger.pipeline} (${trigger.eventName} ${trigger.object.location})`;
    case 'poll':
      return `poll ${trigger.pipeline} (${trigger.object.location})`;
  }
}
