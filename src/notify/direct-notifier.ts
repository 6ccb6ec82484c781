import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.js';
import type { RunListener } from '../pipeline/run-listener.js';
import type { Storage } from '../storage/storage-types.js';
import { attemptDelivery, type AttemptContext } from './delivery-attempt.js';
import type { NotifyConfig } from './notify-config.js';
import { deliveriesOf, webhookDeliverySchema, type WebhookDelivery } from './webhook-delivery.js';
import { WEBHOOK_TIMEOUT_MS } from './webhook-post.js';

/** `score`'s bounds: three attempts, 1 s then 2 s apart, all within 15 s of the run's end. */
export const DIRECT_ATTEMPTS = 3;
export const DIRECT_BUDGET_MS = 15_000;
const FIRST_BACKOFF_MS = 1_000;

/**
 * `score`'s webhooks, delivered by the process itself (there is no queue): by the rules of queue
 * mode, but bounded, so that a receiver that is down delays the process's exit by DIRECT_BUDGET_MS
 * at most and never changes its exit code. `settled()` answers once every delivery has been
 * delivered or given up.
 */
export function directNotifier(config: NotifyConfig, storage: Storage, log: Logger): { listener: RunListener; settled(): Promise<void> } {
  const pending: Promise<void>[] = [];
  const ctx: AttemptContext = { secret: config.secret, storage, log: log.child({ notify: 'webhook' }) };
  return {
    listener: {
      runStarted: () => undefined,
      runEnded: (manifest) => {
        const deadline = Date.now() + DIRECT_BUDGET_MS;
        // Read as the queue's worker reads it: the manifest's folder text becomes the location it records in.
        for (const delivery of deliveriesOf(manifest, config)) pending.push(deliver(webhookDeliverySchema.parse(delivery), deadline, ctx));
      },
    },
    settled: async () => {
      await Promise.all(pending);
    },
  };
}

/** Attempts until delivered, refused, DIRECT_ATTEMPTS made, or no time is left before `deadline`. */
async function deliver(delivery: WebhookDelivery, deadline: number, ctx: AttemptContext): Promise<void> {
  for (let number = 1, backoff = FIRST_BACKOFF_MS; ; number++, backoff *= 2) {
    const timeoutMs = Math.max(0, Math.min(WEBHOOK_TIMEOUT_MS, deadline - Date.now()));
    // Another attempt must fit its backoff and a second's wait for an answer before the deadline.
    const last = () => number >= DIRECT_ATTEMPTS || Date.now() + backoff + 1_000 > deadline;
    const result = await attemptDelivery(delivery, { number, last, timeoutMs }, ctx);
    if (result.verdict !== 'retry') return;
    await sleep(backoff);
  }
}
