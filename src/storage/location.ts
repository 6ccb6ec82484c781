import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { errorMessage, UsageError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';

/**
 * Where an input or output lives. Parsed once from user text so every later step (reading,
 * writing run folders, manifests) works on a checked value and never re-parses strings.
 * A file path is always absolute, so a location means the same thing whatever the cwd later is.
 */
export type Location = FileLocation | S3Location;

/** A local file or folder; `path` is absolute. */
export type FileLocation = { kind: 'file'; path: string };

/** An S3 object or folder; `key` is kept exactly as written (not URL-decoded), '' is the bucket root. */
export type S3Location = { kind: 's3'; bucket: string; key: string };

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

/** Whether a location text starts with a scheme (`s3://`, `file://`, ...) rather than being a plain path. */
export function hasScheme(text: string): boolean {
  return SCHEME.test(text);
}
const BUCKET = /^[A-Za-z0-9._-]+$/;
const SUPPORTED = 'use s3://bucket/key, file:///absolute/path or a local path';

export function parseLocation(text: string): Location {
  if (text.trim() === '') throw new UsageError(`location is empty: ${SUPPORTED}`);
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: 'file', path: path.resolve(text) };
  if (scheme === 's3') {
    const rest = text.slice('s3://'.length);
    const slash = rest.indexOf('/');
    const bucket = slash === -1 ? rest : rest.slice(0, slash);
    if (!BUCKET.test(bucket)) {
      throw new UsageError(`location '${excerpt(text)}' has no valid bucket name: use s3://bucket/key`);
    }
    return { kind: 's3', bucket, key: slash === -1 ? '' : rest.slice(slash + 1) };
  }
  if (scheme === 'file') {
    try {
      return { kind: 'file', path: fileURLToPath(text) };
    } catch (err) {
      throw new UsageError(`location '${excerpt(text)}' is not a valid file URL: use file:///absolute/path`, { cause: err });
    }
  }
  throw new UsageError(`location '${excerpt(text)}' has an unsupported scheme '${excerpt(scheme)}://': ${SUPPORTED}`);
}

/**
 * A location as files and job data store it (text, formatLocation's), parsed once by the schema
 * that reads them, so code past the read sees only Location objects. Whoever writes the value
 * back formats it again: the stored form stays text.
 */
export const storedLocationSchema = z.string().transform((text, ctx): Location => {
  try {
    return parseLocation(text);
  } catch (err) {
    ctx.issues.push({ code: 'custom', message: errorMessage(err), input: text });
    return z.NEVER;
  }
});

export function formatLocation(loc: Location): string {
  return loc.kind === 's3' ? `s3://${loc.bucket}/${loc.key}` : loc.path;
}

/** Appends path segments; for S3 a trailing '/' on the last part is kept, so the result can name a folder. */
export function joinLocation(loc: Location, ...parts: string[]): Location {
  if (loc.kind === 'file') return { kind: 'file', path: path.join(loc.path, ...parts) };
  let key = loc.key;
  for (const part of parts) {
    const piece = part.replace(/\/{2,}/g, '/').replace(/^\//, '');
    if (piece === '') continue;
    key = key === '' || key.endsWith('/') ? key + piece : `${key}/${piece}`;
  }
  return { kind: 's3', bucket: loc.bucket, key };
}

/** The last segment of the path or key ('' for a bucket root). */
export function basename(loc: Location): string {
  if (loc.kind === 'file') return path.basename(loc.path);
  const segments = loc.key.split('/').filter((s) => s !== '');
  return segments.at(-1) ?? '';
}

/** The folder a file or folder is in: its path or key without the last segment (a key keeps its trailing '/'). */
export function parentLocation(loc: Location): Location {
  if (loc.kind === 'file') return { kind: 'file', path: path.dirname(loc.path) };
  const key = loc.key.replace(/\/+$/, '');
  return { kind: 's3', bucket: loc.bucket, key: key.slice(0, key.lastIndexOf('/') + 1) };
}
