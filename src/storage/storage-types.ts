import type { Readable } from 'node:stream';
import type { Location } from './location.js';

/**
 * What a run records about its input so it can tell later whether the input changed: S3 gives an
 * ETag, local files a size and modification time.
 */
export interface ObjectInfo {
  size: number;
  /** S3's ETag as S3 sends it, in quotes (`"9b2cf535f27731c974343645a3985328"`); never set for local files. */
  etag?: string;
  /** When the file was last modified (S3: LastModified, to the second). */
  mtimeMs?: number;
}

/** A file found by `list`: where it is, and what `stat` would say of it. */
export interface ListedFile extends ObjectInfo {
  location: Location;
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
 * One API over local disk and S3, so the scoring core never branches on where data lives.
 * Failures are BatchScorerErrors: NotFoundError (E_NOT_FOUND) for a missing file, object or bucket,
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
  /** Every file below the folder, recursively, sorted by key or path; S3 follows every page of the listing. */
  list(prefix: Location, signal?: AbortSignal): AsyncIterable<ListedFile>;
  /**
   * Whether nothing but folders is below the folder, which `list` alone cannot tell: on local disk
   * no entry but folders at any depth (no file, link, FIFO or half-written file; empty folders hold
   * nothing to harm); on S3 no object. A folder that does not exist is empty.
   */
  isEmpty(prefix: Location, signal?: AbortSignal): Promise<boolean>;
  /**
   * Writes a small file only where none exists: true when this call made it, false when a file was
   * there (whoever wrote it, even a moment before). What makes a claim: of two writers, one wins.
   * S3 asks `If-None-Match: *` (AWS S3, MinIO); a server that ignores it overwrites.
   */
  create(loc: Location, body: string, signal?: AbortSignal): Promise<boolean>;
  /** Missing is fine. */
  remove(loc: Location): Promise<void>;
  /**
   * Deletes the files below the folder that `which` names (by their path below it, `/`-separated),
   * and, on local disk, the folders this leaves empty. Every other file stays, and so do the
   * folders holding one: never a recursive delete of what the caller did not name. Half-written
   * files of a named file (a write cut short) go with it.
   */
  removeFiles(prefix: Location, which: (name: string) => boolean): Promise<void>;
  /**
   * Why files could not be written below the folder, or undefined when nothing is seen to stop
   * them; creates nothing. Local: the folder, or the nearest part of its path that exists, must be
   * a folder this process may write in. S3: the bucket must exist.
   */
  whyUnwritable(prefix: Location, signal?: AbortSignal): Promise<string | undefined>;
  /**
   * Bytes free for this process on the disk a folder is (or would be made) on, for a write that
   * must leave room; undefined where storage has no such bound (S3).
   */
  freeBytes(prefix: Location, signal?: AbortSignal): Promise<number | undefined>;
  /** Releases the S3 client's sockets; safe to call twice. */
  close(): void;
}
