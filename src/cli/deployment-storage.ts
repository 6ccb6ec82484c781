import { type Settings, storageGuard } from '../config/index.js';
import { createStorage, guardedStorage, type Storage } from '../storage/index.js';

/**
 * The storage of a command that runs or serves runs (`score`, `worker`, `serve`): local files and
 * S3 as the settings say, every call checked against the deployment policy (see storageGuard).
 */
export function deploymentStorage(settings: Settings): Storage {
  return guardedStorage(createStorage(settings.s3), storageGuard(settings.policy));
}
