import { setTimeout as sleep } from 'node:timers/promises';
import type { DeploymentPolicy } from '../config/index.js';
import type { Logger } from '../log.js';
import type { RunListener } from '../scoring/index.js';
import type { Storage } from '../storage/index.js';
import { attemptDelivery, type AttemptContext } from './delivery-attempt.js';
import { checkedDelivery } from './delivery-check.js';
import type { NotifyConfig } from './notify-config.js';
import { deliveriesOf, type WebhookDelivery } from './webhook-delivery.js';
import { WEBHOOK_TIMEOUT_MS } from './webhook-post.js';
import { webhookRetryDelayMs } from './webhook-retry.js';

/** `score`'s bounds: three attempts, about 1 s then 2 s apart (see webhookRetryDelayMs), all within 15 s of the run's end. */
export const DIRECT_ATTEMPTS = 3;
export const DIRECT_DEADLINE_MS = 15_000;

/**
 * `score`'s webhooks, delivered by the process itself (there is no queue): by the rules of queue
 * mode, but bounded, so that a receiver that is down delays the process's exit by DIRECT_DEADLINE_MS
 * at most and never changes its exit code. `settled()` answers once every delivery has been
 * delivered or given up.
 */
export function directNotifier(
  config: NotifyConfig,
  policy: DeploymentPolicy,
  storage: Storage,
  log: Logger,
): { listener: RunListener; settled(): Promise<void> } {
  const pending: Promise<void>[] = [];
  const ctx: AttemptContext = { secret: config.secret, storage, log: log.child({ notify: 'webhook' }) };
  return {
    listener: {
      runStarted: () => undefined,
      runEnded: (manifest) => {
        const deadline = Date.now() + DIRECT_DEADLINE_MS;
        // Checked as the queue's worker checks a job: the run end's folder becomes the location it records in.
        for (const job of deliveriesOf(manifest, config)) {
          const delivery = checkedDelivery(job.deliveryId, job, { config, policy });
          pending.push(delivery.then((d) => deliver(d, deadline, ctx)).catch((err: unknown) => ctx.log.warn({ err }, 'webhook not sent')));
        }
      },
    },
    settled: async () => {
      await Promise.all(pending);
    },
  };
}

/** Attempts until delivered, refused, DIRECT_ATTEMPTS made, or no time is left before `deadline`. */
async function deliver(delivery: WebhookDelivery, deadline: number, ctx: AttemptContext): Promise<void> {
  for (let number = 1; ; number++) {
    const timeoutMs = Math.max(0, Math.min(WEBHOOK_TIMEOUT_MS, deadline - Date.now()));
    const wait = webhookRetryDelayMs(number);
    // Another attempt must fit its wait and a second's wait for an answer before the deadline.
    const last = () => number >= DIRECT_ATTEMPTS || Date.now() + wait + 1_000 > deadline;
    const result = await attemptDelivery(delivery, { number, last, timeoutMs }, ctx);
    if (result.verdict !== 'retry') return;
    await sleep(wait);
  }
}
