import type { Logger } from '../log.js';
import type { Storage } from '../storage/index.js';
import { recordDelivery } from './delivery-record.js';
import type { WebhookDelivery } from './webhook-delivery.js';
import { postWebhook, type AttemptResult } from './webhook-post.js';
import { targetOrigin } from '../config/index.js';

/** What an attempt needs besides its delivery. */
export interface AttemptContext {
  secret: string;
  storage: Storage;
  log: Logger;
}

/**
 * One attempt of a delivery, logged and recorded in the run folder (see recordDelivery); `last()`,
 * asked once the answer is in, says whether another attempt follows a passing failure (the
 * verdict answered is `give-up` when none does). A record that cannot be written is logged, and
 * changes nothing to the delivery.
 */
export async function attemptDelivery(
  delivery: WebhookDelivery,
  attempt: { number: number; last: () => boolean; timeoutMs?: number },
  ctx: AttemptContext,
): Promise<AttemptResult> {
  const result = await postWebhook(delivery, ctx.secret, attempt.timeoutMs);
  const target = targetOrigin(delivery.url);
  const log = ctx.log.child({ deliveryId: delivery.id, target, attempt: attempt.number });
  const outcome = result.verdict === 'delivered' ? 'delivered' : result.verdict === 'retry' && !attempt.last() ? 'retrying' : 'gave-up';
  if (outcome === 'delivered') log.info({ status: result.status }, 'webhook delivered');
  else
    log.warn(
      { err: result.cause, status: result.status, reason: result.error },
      outcome === 'retrying' ? 'webhook not delivered; trying again' : 'webhook not delivered; given up',
    );
  if (delivery.folder !== null) {
    const record = {
      deliveryId: delivery.id,
      events: delivery.events,
      target,
      attempts: attempt.number,
      lastStatus: result.status,
      lastError: result.error,
      outcome,
      at: new Date().toISOString(),
    } as const;
    await recordDelivery(ctx.storage, delivery.folder, record).catch((err: unknown) =>
      log.warn({ err }, 'could not record the webhook delivery in the run folder'),
    );
  }
  return { ...result, verdict: outcome === 'gave-up' ? 'give-up' : result.verdict };
}
