import { createHmac, timingSafeEqual } from 'node:crypto';

/** What the seal's key is made for: a key of its own, so that no seal is ever a webhook signature, nor one the other way round. */
const SEAL_KEY_CONTEXT = 'batch-scorer notifications job seal v1';

/**
 * The seal of a delivery job's data: hex HMAC-SHA256 of its JSON, with a key derived from
 * NOTIFY_SECRET. The worker that enqueues a delivery seals it and the one that attempts it checks
 * the seal first: whoever can write to Redis but does not hold NOTIFY_SECRET cannot make a job
 * the workers take, only replay one they made (the same delivery to the same target, which a
 * receiver drops by its delivery id). `fields` must be read through the job's schema on both
 * sides, so that their JSON is written in the same order.
 */
export function deliverySeal(secret: string, fields: unknown): string {
  const key = createHmac('sha256', secret).update(SEAL_KEY_CONTEXT).digest();
  return createHmac('sha256', key).update(JSON.stringify(fields)).digest('hex');
}

/** Whether `seal` is the seal of `fields` (compared in constant time). */
export function sealHolds(secret: string, fields: unknown, seal: string): boolean {
  const expected = Buffer.from(deliverySeal(secret, fields), 'hex');
  const given = Buffer.from(seal, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
