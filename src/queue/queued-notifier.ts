import { DelayedError, UnrecoverableError, type Job, type Processor, type Queue } from 'bullmq';
import { errorCode } from '../errors.js';
import type { Logger } from '../log.js';
import { readJobData } from './queues.js';
import { toQueueError } from './to-queue-error.js';
import type { RunListener } from '../scoring/index.js';
import type { Storage } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import {
  attemptDelivery,
  checkedDelivery,
  deliveriesOf,
  type DeliveryCheck,
  type DeliveryJob,
  deliveryJobSchema,
  type WebhookDelivery,
  webhookRetryDelayMs,
} from '../notify/index.js';

/** Webhook deliveries: one job per run end and target, its id the delivery's. */
export const NOTIFICATIONS_QUEUE = 'notifications';

/** The backoff type of delivery jobs: the worker's backoff strategy, webhookRetryDelayMs. */
const WEBHOOK_BACKOFF = 'webhook';

/**
 * Five attempts, about 1, 2, 4 and 8 s apart (see webhookRetryDelayMs): a receiver failing twice
 * has the third within seconds. Kept a week: a run end told again meanwhile finds its job by id
 * and is not delivered twice.
 */
export const NOTIFICATION_JOB_OPTS = {
  attempts: 5,
  backoff: { type: WEBHOOK_BACKOFF },
  removeOnComplete: { age: 7 * 24 * 3600, count: 5000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 5000 },
} as const;

/** How long a delivery whose target is busy in this process waits before it is taken again (no attempt spent). */
const TARGET_BUSY_WAIT_MS = 1_000;

/** The notifications queue's processor, and how a worker runs it (see AlsoProcessed). */
export interface NotificationsProcessing {
  processor: Processor<DeliveryJob>;
  /** One slot per configured target: with one attempt per target at a time, every target can have one in flight. */
  concurrency: number;
  backoffStrategy: (attemptsMade: number) => number;
}

/**
 * Queue mode's webhooks, over the notifications queue given (NOTIFICATIONS_QUEUE, on a worker's
 * connection, so that an add waits out a Redis outage instead of failing and losing the
 * delivery): a listener that enqueues each delivery of a run end (in the background: a run's end
 * is never delayed by it), and the processor of that queue as a worker takes it (see
 * WorkerOptions.alsoProcess), which makes one attempt per take. At least once: a delivery whose
 * answer was lost is sent again, with the same X-Batch-Scorer-Delivery. A job is checked before
 * anything is sent (see checkedDelivery); one refused fails at once, logged, and sends and
 * writes nothing. A process attempts one delivery per target at a time: a target that hangs
 * holds up its own deliveries, never another's.
 */
export function queuedNotifier(
  notifications: Queue<DeliveryJob>,
  check: DeliveryCheck,
  storage: Storage,
  log: Logger,
): { listener: RunListener } & NotificationsProcessing {
  const { config } = check;
  const notifyLog = log.child({ queue: NOTIFICATIONS_QUEUE });
  notifications.on('error', (err) => notifyLog.warn({ err }, 'notifications queue error'));
  const listener: RunListener = {
    runStarted: () => undefined,
    runEnded: (manifest) => {
      for (const delivery of deliveriesOf(manifest, config)) {
        notifications
          .add('webhook', delivery, { ...NOTIFICATION_JOB_OPTS, jobId: delivery.deliveryId })
          .catch((err: unknown) => notifyLog.error({ err, runId: manifest.runId, deliveryId: delivery.deliveryId }, 'could not enqueue the webhook delivery'));
      }
    },
  };
  const busy = new Set<string>();
  const processor: Processor<DeliveryJob> = async (job, token) => {
    const delivery = await readDelivery(job, check, notifyLog);
    if (busy.has(delivery.url)) {
      await job.moveToDelayed(Date.now() + TARGET_BUSY_WAIT_MS, token);
      throw new DelayedError();
    }
    busy.add(delivery.url);
    try {
      const number = job.attemptsMade + 1;
      const last = () => number >= (job.opts.attempts ?? 1);
      const result = await attemptDelivery(delivery, { number, last }, { secret: config.secret, storage, log: notifyLog });
      if (result.verdict === 'delivered') return { status: result.status };
      const why = `webhook answered ${result.status ?? result.error}`;
      throw result.verdict === 'give-up' ? new UnrecoverableError(`${why}: not tried again`) : new Error(why);
    } finally {
      busy.delete(delivery.url);
    }
  };
  return { listener, processor, concurrency: Math.max(1, config.targets.size), backoffStrategy: webhookRetryDelayMs };
}

/** A job's delivery, checked (see checkedDelivery); a refusal is logged and fails the job at once. */
async function readDelivery(job: Job<DeliveryJob>, check: DeliveryCheck, log: Logger): Promise<WebhookDelivery> {
  try {
    return await checkedDelivery(job.id, readJobData(deliveryJobSchema, job), check);
  } catch (err) {
    const refused = toQueueError(err);
    log.error({ jobId: excerpt(job.id ?? '?', 200), code: errorCode(err), reason: refused.message }, 'webhook delivery job refused: nothing sent or written');
    throw refused;
  }
}
