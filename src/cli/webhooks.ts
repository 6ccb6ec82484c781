import type { Settings } from '../config/settings.js';
import type { Logger } from '../log.js';
import { directNotifier } from '../notify/direct-notifier.js';
import { notifyConfig } from '../notify/notify-config.js';
import type { QueueConfig } from '../queue/queues.js';
import type { Storage } from '../storage/storage-types.js';

/**
 * A worker's webhooks: NOTIFY_URLS, and the `notify` of the pipelines of JOBS_DIR when the folder
 * is there (runs end in workers, so they read the targets; they never travel with a run, where
 * pages and manifests would show a URL's token). Undefined when there is nothing to tell.
 */
export async function queuedWebhooks(settings: Settings, queue: QueueConfig, storage: Storage, log: Logger) {
  const { loadPipelinesIfPresent } = await import('../triggers/pipelines.js');
  const config = notifyConfig(settings.notify, await loadPipelinesIfPresent(settings.jobsDir));
  if (!config) return undefined;
  const { queuedNotifier } = await import('../notify/queued-notifier.js');
  return queuedNotifier(queue, config, storage, log);
}

/** `score`'s webhooks: NOTIFY_URLS, delivered by the process itself (see directNotifier); undefined without any. */
export function directWebhooks(settings: Settings, storage: Storage, log: Logger) {
  const config = notifyConfig(settings.notify);
  return config && directNotifier(config, storage, log);
}
