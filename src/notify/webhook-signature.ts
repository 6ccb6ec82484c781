import { createHmac } from 'node:crypto';

/** The header a delivery's signature is sent in. */
export const SIGNATURE_HEADER = 'X-Batch-Scorer-Signature';
/** The header of a delivery's id: the same on every attempt, for receivers to drop what they have had. */
export const DELIVERY_HEADER = 'X-Batch-Scorer-Delivery';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with NOTIFY_SECRET, made at each
 * attempt: a receiver refusing an old `t` refuses a replayed request, not a late retry.
 */
export function webhookSignature(secret: string, body: string, nowMs: number = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${v1}`;
}
