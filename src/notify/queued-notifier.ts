import { UnrecoverableError, type Processor, type Queue } from 'bullmq';
import type { Logger } from '../log.js';
import { readJobData } from '../queue/queues.js';
import { toQueueError } from '../queue/to-queue-error.js';
import type { RunListener } from '../pipeline/run-listener.js';
import type { Storage } from '../storage/storage-types.js';
import { attemptDelivery } from './delivery-attempt.js';
import type { NotifyConfig } from './notify-config.js';
import { deliveriesOf, webhookDeliverySchema, type StoredWebhookDelivery, type WebhookDelivery } from './webhook-delivery.js';

/** Webhook deliveries: one job per run end and target, its id the delivery's. */
export const NOTIFICATIONS_QUEUE = 'notifications';

/**
 * Five attempts, 1 s apart and doubling (at 0, 1, 3, 7 and 15 s): a receiver failing twice has
 * the third within seconds. Kept a week: a run end told again meanwhile finds its job by id
 * and is not delivered twice.
 */
export const NOTIFICATION_JOB_OPTS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 5000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
} as const;

/**
 * Queue mode's webhooks, over the notifications queue given (NOTIFICATIONS_QUEUE, on a worker's
 * connection, so that an add waits out a Redis outage instead of failing and losing the
 * delivery): a listener that enqueues each delivery of a run end (in the background: a run's end
 * is never delayed by it), and the processor of that queue as a worker takes it (see
 * WorkerOptions.alsoProcess), which makes one attempt per take. At least once: a delivery whose
 * answer was lost is sent again, with the same X-Batch-Scorer-Delivery.
 */
export function queuedNotifier(
  notifications: Queue<StoredWebhookDelivery>,
  config: NotifyConfig,
  storage: Storage,
  log: Logger,
): { listener: RunListener; processor: Processor<StoredWebhookDelivery> } {
  const notifyLog = log.child({ queue: NOTIFICATIONS_QUEUE });
  notifications.on('error', (err) => notifyLog.warn({ err }, 'notifications queue error'));
  const listener: RunListener = {
    runStarted: () => undefined,
    runEnded: (manifest) => {
      for (const delivery of deliveriesOf(manifest, config)) {
        notifications
          .add('webhook', delivery, { ...NOTIFICATION_JOB_OPTS, jobId: delivery.id })
          .catch((err: unknown) => notifyLog.error({ err, runId: manifest.runId, deliveryId: delivery.id }, 'could not enqueue the webhook delivery'));
      }
    },
  };
  const processor: Processor<StoredWebhookDelivery> = async (job) => {
    const number = job.attemptsMade + 1;
    const last = () => number >= (job.opts.attempts ?? 1);
    let delivery: WebhookDelivery;
    try {
      // Job data of another release, or written by hand: failed at once (E_USAGE), naming what does not fit.
      delivery = readJobData(webhookDeliverySchema, job);
    } catch (err) {
      throw toQueueError(err);
    }
    const result = await attemptDelivery(delivery, { number, last }, { secret: config.secret, storage, log: notifyLog });
    if (result.verdict === 'delivered') return { status: result.status };
    const why = `webhook answered ${result.status ?? result.error}`;
    throw result.verdict === 'give-up' ? new UnrecoverableError(`${why}: not tried again`) : new Error(why);
  };
  return { listener, processor };
}
