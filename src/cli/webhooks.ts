import type { Settings } from '../config/settings.js';
import type { Logger } from '../log.js';
import { directNotifier } from '../notify/direct-notifier.js';
import type { RunListener } from '../scoring/run-listener.js';
import { notifyConfig } from '../notify/notify-config.js';
import type { DeliveryJob } from '../notify/webhook-delivery.js';
import { redisConnection, type QueueConfig } from '../queue/queues.js';
import type { AlsoProcessed } from '../queue/worker-options.js';
import type { Storage } from '../storage/storage-types.js';
import type { Pipeline } from '../triggers/pipelines.js';

/**
 * A worker's webhooks: NOTIFY_URLS, and the `notify` of the pipelines of JOBS_DIR when the folder
 * is there (runs end in workers, so they read the targets; they never travel with a run, where
 * pages and manifests would show a URL's token, nor with a delivery job, which names its target).
 * Undefined when there is nothing to tell.
 */
export async function queuedWebhooks(
  settings: Settings,
  pipelines: readonly Pipeline[] | undefined,
  queue: QueueConfig,
  storage: Storage,
  log: Logger,
): Promise<{ listener: RunListener; also: AlsoProcessed } | undefined> {
  const config = notifyConfig(settings.notify, pipelines);
  if (!config) return undefined;
  const [{ Queue }, { NOTIFICATIONS_QUEUE, queuedNotifier }] = await Promise.all([import('bullmq'), import('../notify/queued-notifier.js')]);
  // A worker's connection: an add waits out a Redis outage instead of failing (the delivery would be lost).
  const connection = redisConnection(queue, 'worker');
  const notifications = new Queue<DeliveryJob>(NOTIFICATIONS_QUEUE, { connection, prefix: queue.prefix });
  const { listener, ...processing } = queuedNotifier(notifications, { config, policy: settings.policy }, storage, log);
  // Closed by the worker's shutdown once it takes no more jobs.
  const close = async () => {
    await notifications.close();
    await connection.close();
  };
  return { listener, also: { queue: NOTIFICATIONS_QUEUE, ...processing, close } };
}

/** `score`'s webhooks: NOTIFY_URLS, delivered by the process itself (see directNotifier); undefined without any. */
export function directWebhooks(settings: Settings, storage: Storage, log: Logger) {
  const config = notifyConfig(settings.notify);
  return config && directNotifier(config, settings.policy, storage, log);
}
