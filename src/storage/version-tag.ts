import type { ObjectInfo } from './storage-types.js';

/**
 * What tells one version of a file from another, as text: S3's ETag without the quotes listings
 * and HEAD put around it (events send it bare); for a local file, which has no ETag, its size and
 * modification time (`<size>-<mtime ms>`).
 */
export function versionTag(info: Pick<ObjectInfo, 'etag' | 'size' | 'mtimeMs'>): string {
  if (info.etag !== undefined) return info.etag.replace(/^"(.*)"$/, '$1');
  return `${info.size}-${Math.trunc(info.mtimeMs ?? 0)}`;
}
