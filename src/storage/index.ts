/** Where files are: local files and S3 behind one Storage (S3's client is loaded when a run first names S3). */

// Locations (local paths, s3:// URLs) and an input's files.
export {
  basename,
  formatLocation,
  hasScheme,
  joinLocation,
  parentLocation,
  parseLocation,
  storedLocationSchema,
  type Location,
  type S3Location,
} from './location.js';
export { inputKind, listInputFiles } from './input-files.js';

// Storage: made for a process, guarded by the deployment policy.
export type { ListedFile, ObjectInfo, Storage, WriteOptions } from './storage-types.js';
export { createStorage, holdsFiles, readTextIfExists } from './storage.js';
export { guardedStorage, type StorageGuard } from './guarded-storage.js';
export { s3SettingsFromEnv, type S3Settings } from './s3-settings.js';
export { versionTag } from './version-tag.js';
