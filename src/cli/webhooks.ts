import type { Settings } from '../config/index.js';
import type { Logger } from '../log.js';
import { directNotifier, notifyConfig } from '../notify/index.js';
import type { Storage } from '../storage/index.js';

/** `score`'s webhooks: NOTIFY_URLS, delivered by the process itself (see directNotifier); undefined without any. */
export function directWebhooks(settings: Settings, storage: Storage, log: Logger) {
  const config = notifyConfig(settings.notify);
  return config && directNotifier(config, settings.policy, storage, log);
}
