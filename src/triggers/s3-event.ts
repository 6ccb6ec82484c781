import { z } from 'zod';
import { type S3Location, versionTag } from '../storage/index.js';
import { fileDropSubmission, objectVersion, pipelinesFor } from './file-drop.js';
import type { Pipeline } from './pipelines.js';
import type { FileDropSubmission } from '../queue/index.js';

/** The AWS test event S3 sends when notifications are configured; it names no object. */
const TEST_EVENT = 's3:TestEvent';

/** `ObjectCreated:Put` (AWS) or `s3:ObjectCreated:Put` (MinIO): a new object or a new version of one. */
const CREATED = /^(s3:)?ObjectCreated:/;

/** S3 sends object keys URL-encoded, with `+` for a space. */
function decodeKey(key: string): string {
  return decodeURIComponent(key.replace(/\+/g, ' '));
}

const recordSchema = z.looseObject({
  /** `ObjectCreated:Put`, `s3:ObjectCreated:CompleteMultipartUpload`, `ObjectRemoved:Delete`, ... */
  eventName: z.string(),
  eventTime: z.string().optional(),
  s3: z.looseObject({
    bucket: z.looseObject({ name: z.string().min(1) }),
    object: z.looseObject({
      key: z.string().superRefine((key, ctx) => {
        try {
          decodeKey(key);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'is not URL-encoded as S3 sends keys (a "%" that starts no escape)' });
        }
      }),
      /** Absent from events of removals; required of created objects (see below). */
      eTag: z.string().min(1).optional(),
      /** A number from AWS and MinIO; some S3-compatible servers send it as text. */
      size: z.union([z.number().int().min(0), z.string().regex(/^\d+$/).transform(Number)]).optional(),
      /** In buckets with versioning. */
      versionId: z.string().optional(),
    }),
  }),
});

/**
 * `POST /events/s3`'s body: an S3 event notification, in the AWS format (`{"Records": [...]}`),
 * MinIO's webhook format (the same `Records`, with `EventName` and `Key` beside them), or the AWS
 * test event (`{"Event": "s3:TestEvent", ...}`). Fields this does not read are let through.
 */
export const s3EventSchema = z
  .looseObject({
    Records: z.array(recordSchema).optional(),
    /** `s3:TestEvent` in the AWS test event. */
    Event: z.string().optional(),
  })
  .superRefine((body, ctx) => {
    if (body.Records === undefined && body.Event !== TEST_EVENT) {
      ctx.addIssue({ code: 'custom', path: ['Records'], message: `is required: an S3 event notification has Records (or is the ${TEST_EVENT})` });
    }
    for (const [i, record] of (body.Records ?? []).entries()) {
      if (CREATED.test(record.eventName) && record.s3.object.eTag === undefined) {
        ctx.addIssue({ code: 'custom', path: ['Records', i, 's3', 'object', 'eTag'], message: 'is required of an ObjectCreated event' });
      }
    }
  });
export type S3Event = z.output<typeof s3EventSchema>;

/** A record that starts no run, and why, for the log. */
export interface IgnoredRecord {
  bucket: string;
  key: string;
  eventName: string;
  reason: 'not ObjectCreated' | 'no pipeline watches it';
}

/**
 * The runs an event starts: one per created object and pipeline that watches it, the same
 * object twice in one message once; and the records that start none. Matching only, in memory:
 * enqueueing is the caller's. `now` dates the runs of records without an event time.
 */
export function fileDropsOfEvent(event: S3Event, pipelines: readonly Pipeline[], now: Date): { drops: FileDropSubmission[]; ignored: IgnoredRecord[] } {
  const drops = new Map<string, FileDropSubmission>();
  const ignored: IgnoredRecord[] = [];
  for (const record of event.Records ?? []) {
    const location: S3Location = { kind: 's3', bucket: record.s3.bucket.name, key: decodeKey(record.s3.object.key) };
    const { eventName } = record;
    const seen = { bucket: location.bucket, key: location.key, eventName };
    if (!CREATED.test(eventName)) {
      ignored.push({ ...seen, reason: 'not ObjectCreated' });
      continue;
    }
    const watching = pipelinesFor(pipelines, location);
    if (watching.length === 0) {
      ignored.push({ ...seen, reason: 'no pipeline watches it' });
      continue;
    }
    const object = objectVersion(location, versionTag({ etag: record.s3.object.eTag!, size: 0 }), record.s3.object);
    const eventTime = record.eventTime !== undefined && !Number.isNaN(Date.parse(record.eventTime)) ? new Date(record.eventTime) : undefined;
    for (const pipeline of watching) {
      const trigger = {
        kind: 'event' as const,
        pipeline: pipeline.name,
        object,
        eventName,
        ...(record.eventTime !== undefined && { eventTime: record.eventTime }),
      };
      const key = `${pipeline.name}\n${object.location}\n${object.etag}`;
      if (!drops.has(key)) drops.set(key, fileDropSubmission(pipeline, trigger, eventTime ?? now));
    }
  }
  return { drops: [...drops.values()], ignored };
}
