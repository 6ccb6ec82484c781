import { NotFoundError } from '../errors.js';
import { LocalStorage } from './local-storage.js';
import type { Location } from './location.js';
import type { S3Storage } from './s3-storage.js';
import { s3SettingsFromEnv, type S3Settings } from './s3-settings.js';
import type { Storage } from './storage-types.js';

/**
 * Without settings, S3 settings are read from the environment when S3 is first used. The AWS SDK
 * (about 20 MiB) is loaded then too, not by runs that only touch local files.
 */
export function createStorage(settings?: S3Settings): Storage {
  const local = new LocalStorage();
  let s3: Promise<S3Storage> | undefined;
  const remote = (): Promise<S3Storage> => (s3 ??= import('./s3-storage.js').then(({ S3Storage }) => new S3Storage(settings ?? s3SettingsFromEnv())));
  const stat: Storage['stat'] = async (loc, signal) => (loc.kind === 'file' ? local.stat(loc, signal) : (await remote()).stat(loc, signal));
  return {
    stat,
    exists: async (loc, signal) => (await unlessMissing(stat(loc, signal))) !== undefined,
    read: async (loc, options) => (loc.kind === 'file' ? local.read(loc, options) : (await remote()).read(loc, options)),
    readText: async (loc, signal) => (loc.kind === 'file' ? local.readText(loc, signal) : (await remote()).readText(loc, signal)),
    write: async (loc, body, options) => (loc.kind === 'file' ? local.write(loc, body, options) : (await remote()).write(loc, body, options)),
    list: async function* (prefix, signal) {
      yield* prefix.kind === 'file' ? local.list(prefix, signal) : (await remote()).list(prefix, signal);
    },
    isEmpty: async (prefix, signal) => (prefix.kind === 'file' ? local.isEmpty(prefix, signal) : (await remote()).isEmpty(prefix, signal)),
    create: async (loc, body, signal) => (loc.kind === 'file' ? local.create(loc, body, signal) : (await remote()).create(loc, body, signal)),
    remove: async (loc) => (loc.kind === 'file' ? local.remove(loc) : (await remote()).remove(loc)),
    removeFiles: async (prefix, which) => (prefix.kind === 'file' ? local.removeFiles(prefix, which) : (await remote()).removeFiles(prefix, which)),
    whyUnwritable: async (prefix, signal) => (prefix.kind === 'file' ? local.whyUnwritable(prefix, signal) : (await remote()).whyUnwritable(prefix, signal)),
    freeBytes: async (prefix, signal) => (prefix.kind === 'file' ? local.freeBytes(prefix, signal) : undefined),
    close() {
      void s3?.then(
        (client) => client.close(),
        () => undefined,
      );
      s3 = undefined;
    },
  };
}

/** A small file's text, or undefined when it does not exist (yet). */
export function readTextIfExists(storage: Storage, loc: Location, signal?: AbortSignal): Promise<string | undefined> {
  return unlessMissing(storage.readText(loc, signal));
}

/** Whether any file lies below the folder (stops at the first). */
export async function holdsFiles(storage: Storage, prefix: Location, signal?: AbortSignal): Promise<boolean> {
  for await (const _file of storage.list(prefix, signal)) return true;
  return false;
}

/** What a storage call answers, or undefined when its file or object does not exist; other failures stand. */
function unlessMissing<T>(call: Promise<T>): Promise<T | undefined> {
  return call.catch((err: unknown) => {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  });
}
