import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ObjectVersion, RunTrigger } from '../scoring/index.js';
import type { FileDropSubmission } from '../queue/index.js';
import { formatLocation, type Location, parseLocation } from '../storage/index.js';
import type { FileDropPipeline, Pipeline } from './pipelines.js';

// A file version's identity is its location (`s3://bucket/key`, the key decoded) and its ETag: a
// new version of a key has a new ETag and starts a new run, while the same content uploaded again
// has the same ETag (S3's ETag of a single-part upload is its MD5) and starts none. S3 version
// ids are kept in the run's provenance only: a listing does not show them, and a file must have
// the same identity whether an event or a poll sees it first.

/**
 * Whether a pipeline starts a run for a file: it lies under `trigger.prefix` (same bucket, key
 * below the prefix; or a path below the local folder) and its name ends with `trigger.suffix`.
 * Folder markers (keys ending in '/') are not files.
 */
export function watches(pipeline: FileDropPipeline, file: Location): boolean {
  const prefix = parseLocation(pipeline.trigger.prefix);
  if (file.kind === 's3') {
    if (prefix.kind !== 's3' || file.bucket !== prefix.bucket || file.key.endsWith('/')) return false;
    return file.key.startsWith(prefix.key) && file.key.endsWith(pipeline.trigger.suffix);
  }
  if (prefix.kind !== 'file') return false;
  // `file:///in/` keeps its slash where a plain `/in/` loses it: the folder without it.
  return file.path.startsWith(path.resolve(prefix.path) + path.sep) && file.path.endsWith(pipeline.trigger.suffix);
}

/** The file-drop pipelines among `pipelines` that start a run for the file. */
export function pipelinesFor(pipelines: readonly Pipeline[], file: Location): FileDropPipeline[] {
  return pipelines.filter((p): p is FileDropPipeline => p.kind === 'trigger' && watches(p, file));
}

/**
 * The run id a file version proposes: `<pipeline>-<YYYYMMDD>-<12 hex>`, the date the file's (its
 * event or modification time, UTC), the hash of its identity. Two files of one pipeline and day with
 * the same hash would share a run id, and the second would be taken for the first's run: with 48
 * bits, at 100,000 files a day that is about once in 50,000 days. Readable, and the same whichever
 * process computes it from the same facts; where two sightings propose different ids (a date
 * either side of midnight), the claim keeps the first. Pipeline names have at most 64
 * characters, so the id keeps within the 128 that run ids allow.
 */
export function fileDropRunId(pipeline: string, object: Pick<ObjectVersion, 'location' | 'etag'>, at: Date): string {
  const day = at.toISOString().slice(0, 10).replace(/-/g, '');
  const hash = createHash('sha256').update(`${object.location}\n${object.etag}`).digest('hex').slice(0, 12);
  return `${pipeline}-${day}-${hash}`;
}

/** The run a pipeline starts for a file version: the file as input, the pipeline's model, output and options. */
export function fileDropSubmission(pipeline: FileDropPipeline, trigger: Extract<RunTrigger, { kind: 'event' | 'poll' }>, at: Date): FileDropSubmission {
  return {
    input: trigger.object.location,
    model: pipeline.model,
    out: pipeline.output,
    options: { ...pipeline.options, runId: fileDropRunId(pipeline.name, trigger.object, at) },
    trigger,
  };
}

/** A listed or notified file as a version: its location as text, and the parts of it known. */
export function objectVersion(location: Location, etag: string, extra: { versionId?: string; size?: number } = {}): ObjectVersion {
  return {
    location: formatLocation(location),
    etag,
    ...(extra.versionId !== undefined && { versionId: extra.versionId }),
    ...(extra.size !== undefined && { size: extra.size }),
  };
}
