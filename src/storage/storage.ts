import { BatchScorerError } from '../errors.js';
import type { Readable } from 'node:stream';
import { LocalStorage } from './local-storage.js';
import type { Location } from './location.js';
import type { S3Storage } from './s3-storage.js';
import { s3SettingsFromEnv, type S3Settings } from './s3-settings.js';

/**
 * What a run records about its input so it can tell later whether the input changed: S3 gives an
 * ETag, local files a size and modification time.
 */
export interface ObjectInfo {
  size: number;
  etag?: string;
  mtimeMs?: number;
}

/**
 * `start`/`end` (end exclusive) let segments of one big file be read independently; `expect` makes
 * a read fail with E_INPUT_CHANGED instead of silently mixing two versions of an input.
 */
export interface ReadOptions {
  start?: number;
  end?: number;
  expect?: ObjectInfo;
  signal?: AbortSignal;
}

export interface WriteOptions {
  contentType?: string;
  signal?: AbortSignal;
  /** Bytes the body will have, when known: S3 then uses parts just large enough, to buffer less. */
  sizeHint?: number;
}

/**
 * One API over local disk and S3, so the pipeline never branches on where data lives.
 * Failures are BatchScorerErrors: E_INPUT_NOT_FOUND for a missing file, object or bucket,
 * E_INPUT_CHANGED when `expect` no longer holds, E_STORAGE (retriable or not) otherwise;
 * aborts surface as AbortError. Folders ("prefixes") are always taken as whole folders:
 * `s3://b/runs/1` covers `runs/1/...`, never `runs/10/...`.
 */
export interface Storage {
  stat(loc: Location, signal?: AbortSignal): Promise<ObjectInfo>;
  exists(loc: Location, signal?: AbortSignal): Promise<boolean>;
  /** A byte stream that is never buffered whole; destroy it when stopping early. */
  read(loc: Location, options?: ReadOptions): Promise<Readable>;
  /** For small files only (JSON): buffers the whole content. */
  readText(loc: Location, signal?: AbortSignal): Promise<string>;
  /** Atomic: readers see the old content or the new, never a part; a Readable body is streamed. */
  write(loc: Location, body: Readable | string | Uint8Array, options?: WriteOptions): Promise<{ bytes: number }>;
  /** Every file below the folder, recursively, sorted by key or path. */
  list(prefix: Location, signal?: AbortSignal): AsyncIterable<{ location: Location; size: number }>;
  /** Missing is fine. */
  remove(loc: Location): Promise<void>;
  /** Deletes the folder and everything below it; refuses a bucket or filesystem root. */
  removePrefix(prefix: Location): Promise<void>;
  /**
   * Why files could not be written below the folder, or undefined when nothing is seen to stop
   * them; creates nothing. Local: the folder, or the nearest part of its path that exists, must be
   * a folder this process may write in. S3: the bucket must exist.
   */
  whyUnwritable(prefix: Location, signal?: AbortSignal): Promise<string | undefined>;
  /** Releases the S3 client's sockets; safe to call twice. */
  close(): void;
}

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
    remove: async (loc) => (loc.kind === 'file' ? local.remove(loc) : (await remote()).remove(loc)),
    removePrefix: async (prefix) => (prefix.kind === 'file' ? local.removePrefix(prefix) : (await remote()).removePrefix(prefix)),
    whyUnwritable: async (prefix, signal) => (prefix.kind === 'file' ? local.whyUnwritable(prefix, signal) : (await remote()).whyUnwritable(prefix, signal)),
    close() {
      void s3?.then(
        (client) => client.close(),
        () => undefined,
      );
      s3 = undefined;
    },
  };
}

/** A small JSON file's content, or undefined when it does not exist (yet). */
export async function readJsonIfExists<T>(storage: Storage, loc: Location, signal?: AbortSignal): Promise<T | undefined> {
  const text = await unlessMissing(storage.readText(loc, signal));
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

/** What a storage call answers, or undefined when its file or object does not exist; other failures stand. */
function unlessMissing<T>(call: Promise<T>): Promise<T | undefined> {
  return call.catch((err: unknown) => {
    if (err instanceof BatchScorerError && err.code === 'E_INPUT_NOT_FOUND') return undefined;
    throw err;
  });
}
