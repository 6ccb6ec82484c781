import { storageGuard } from '../config/deployment-policy.js';
import type { Settings } from '../config/settings.js';
import { guardedStorage } from '../storage/guarded-storage.js';
import { createStorage } from '../storage/storage.js';
import type { Storage } from '../storage/storage-types.js';

/**
 * The storage of a command that runs or serves runs (`score`, `worker`, `serve`): local files and
 * S3 as the settings say, every call checked against the deployment policy (see storageGuard).
 */
export function deploymentStorage(settings: Settings): Storage {
  return guardedStorage(createStorage(settings.s3), storageGuard(settings.policy));
}
