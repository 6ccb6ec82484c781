import { createHash } from 'node:crypto';

/** What a target name looks like: 16 hex digits. */
export const TARGET_NAME = /^[0-9a-f]{16}$/;

/**
 * The name a delivery job gives its target instead of its URL: the first 16 hex digits of the
 * SHA-256 of the URL as configured (in NOTIFY_URLS or a pipeline's `notify.urls`). Each worker maps
 * it back through its own settings, so a job in Redis can only name a target the deployment
 * configured, and the URL, whose path or query may hold the receiver's token, is never in Redis.
 */
export function targetName(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}
