import { Queue } from 'bullmq';
import type { Settings } from '../config/index.js';
import type { Logger } from '../log.js';
import { type DeliveryJob, notifyConfig, type PipelineNotify } from '../notify/index.js';
import type { RunListener } from '../scoring/index.js';
import type { Storage } from '../storage/index.js';
import { NOTIFICATIONS_QUEUE, queuedNotifier } from './queued-notifier.js';
import { redisConnection, type QueueConfig } from './queues.js';
import type { AlsoProcessed } from './worker-options.js';

/**
 * A worker's webhooks: NOTIFY_URLS, and the `notify` of the pipelines of JOBS_DIR when the folder
 * is there (runs end in workers, so they read the targets; they never travel with a run, where
 * pages and manifests would show a URL's token, nor with a delivery job, which names its target).
 * Undefined when there is nothing to tell.
 */
export function queuedWebhooks(
  settings: Settings,
  pipelines: readonly { name: string; notify?: PipelineNotify }[] | undefined,
  queue: QueueConfig,
  storage: Storage,
  log: Logger,
): { listener: RunListener; also: AlsoProcessed } | undefined {
  const config = notifyConfig(settings.notify, pipelines);
  if (!config) return undefined;
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
