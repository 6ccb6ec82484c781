import { Readable } from 'node:stream';
import type { Location } from './location.js';
import type { Storage } from './storage-types.js';

/**
 * Asked before storage touches a location; each rejects to refuse it (with the error to report),
 * and resolves to let it through.
 */
export interface StorageGuard {
  /** Before a stat, a read, or a listing. */
  read(loc: Location): Promise<void>;
  /** For each file a listing of `folder` finds, before it is handed on. */
  listed(folder: Location, file: Location): Promise<void>;
  /** Before a write, a removal, or a check that a folder can be written (or of its free space). */
  write(loc: Location): Promise<void>;
}

/**
 * Storage that asks a guard first, on every call: wrapped around the real storage where a command
 * starts, so no code path, however it came by a location, reaches a place the guard refuses.
 * Listed files are asked for one by one, so a symbolic link inside a folder cannot lead a read
 * outside it.
 */
export function guardedStorage(storage: Storage, guard: StorageGuard): Storage {
  return {
    stat: async (loc, signal) => {
      await guard.read(loc);
      return storage.stat(loc, signal);
    },
    exists: async (loc, signal) => {
      await guard.read(loc);
      return storage.exists(loc, signal);
    },
    read: async (loc, options) => {
      await guard.read(loc);
      return storage.read(loc, options);
    },
    readText: async (loc, signal) => {
      await guard.read(loc);
      return storage.readText(loc, signal);
    },
    write: async (loc, body, options) => {
      // A refused body stream is never read: destroyed, as a failed write's would be.
      await guard.write(loc).catch((err: unknown) => {
        if (body instanceof Readable) body.destroy();
        throw err;
      });
      return storage.write(loc, body, options);
    },
    list: async function* (prefix, signal) {
      await guard.read(prefix);
      for await (const file of storage.list(prefix, signal)) {
        await guard.listed(prefix, file.location);
        yield file;
      }
    },
    isEmpty: async (prefix, signal) => {
      await guard.read(prefix);
      return storage.isEmpty(prefix, signal);
    },
    remove: async (loc) => {
      await guard.write(loc);
      return storage.remove(loc);
    },
    create: async (loc, body, signal) => {
      await guard.write(loc);
      return storage.create(loc, body, signal);
    },
    removeFiles: async (prefix, which) => {
      await guard.write(prefix);
      return storage.removeFiles(prefix, which);
    },
    whyUnwritable: async (prefix, signal) => {
      await guard.write(prefix);
      return storage.whyUnwritable(prefix, signal);
    },
    freeBytes: async (prefix, signal) => {
      await guard.write(prefix);
      return storage.freeBytes(prefix, signal);
    },
    close: () => storage.close(),
  };
}
