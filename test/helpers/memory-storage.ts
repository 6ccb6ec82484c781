import { createHash } from 'node:crypto';
import path from 'node:path';
import { setImmediate as io } from 'node:timers/promises';
import { addAbortSignal, Readable } from 'node:stream';
import { BatchScorerError, InputError, isAbortError, NotFoundError } from '../../src/errors.js';
import { formatLocation, type Location } from '../../src/storage/location.js';
import type { ListedFile, ObjectInfo, ReadOptions, Storage, WriteOptions } from '../../src/storage/storage-types.js';

/** A file as the map keeps it: its bytes, where it was written, and what `stat` says of it. */
interface MemoryFile {
  location: Location;
  bytes: Buffer;
  mtimeMs: number;
  /** Set for S3 locations only, as S3 gives one and local disk does not. */
  etag?: string;
}

/** The size of the chunks a read streams, as a file read stream's. */
const CHUNK = 64 * 1024;

// Each call awaits a turn of the event loop (`io`), as a disk or network call would: callers meet
// the interleavings real storage gives them, and an abort can land between two calls.

/**
 * A Storage kept in a Map keyed by formatLocation, for fast tests of the pipeline without disk or
 * S3. It keeps the contract of storage-types.ts as local storage (file locations) and S3 (s3
 * locations) keep it: NotFoundError naming a missing file, E_INPUT_CHANGED when `expect` no longer
 * holds, whole-folder prefixes, atomic writes, `create` taken by one writer, aborts as AbortError.
 * File locations also behave like a disk's paths: a file cannot stand where a folder is, nor below
 * a file. `failWrites` makes chosen writes fail, to stop a run mid-way.
 */
export class MemoryStorage implements Storage {
  private readonly files = new Map<string, MemoryFile>();
  /** Modification times only move forward, so that a rewrite of the same size is seen as a change, as on disk. */
  private lastMtimeMs = 0;
  private failing: ((loc: Location) => boolean) | undefined;
  /** The name (formatLocation) of each file written or created, in the order the writes ended: what a test proves an order of writes by. */
  readonly written: string[] = [];

  /**
   * Makes every write and create of a location `when` holds fail with a retriable E_STORAGE (as a
   * full or busy disk would), until called again; `undefined` stops the failures.
   */
  failWrites(when: ((loc: Location) => boolean) | undefined): void {
    this.failing = when;
  }

  /** The names (formatLocation) of every file kept, in key order. */
  keys(): string[] {
    return [...this.files.keys()].sort(byBytes);
  }

  async stat(loc: Location, signal?: AbortSignal): Promise<ObjectInfo> {
    await io();
    signal?.throwIfAborted();
    return info(this.file(loc));
  }

  async exists(loc: Location, signal?: AbortSignal): Promise<boolean> {
    await io();
    signal?.throwIfAborted();
    return this.files.has(formatLocation(loc));
  }

  async read(loc: Location, options: ReadOptions = {}): Promise<Readable> {
    await io();
    const { start = 0, end, expect, signal } = options;
    signal?.throwIfAborted();
    const file = this.file(loc);
    checkUnchanged(loc, file, expect);
    const bytes = end !== undefined && end <= start ? Buffer.alloc(0) : file.bytes.subarray(start, end);
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += CHUNK) chunks.push(bytes.subarray(at, at + CHUNK));
    const stream = Readable.from(chunks, { objectMode: false });
    if (signal === undefined) return stream;
    // As local storage: the stream keeps an abort's error for the caller's first read.
    stream.on('error', () => undefined);
    return addAbortSignal(signal, stream);
  }

  async readText(loc: Location, signal?: AbortSignal): Promise<string> {
    await io();
    signal?.throwIfAborted();
    return this.file(loc).bytes.toString('utf8');
  }

  async write(loc: Location, body: Readable | string | Uint8Array, options: WriteOptions = {}): Promise<{ bytes: number }> {
    const source = body instanceof Readable ? body : Readable.from([typeof body === 'string' ? Buffer.from(body) : body], { objectMode: false });
    const chunks: Buffer[] = [];
    try {
      options.signal?.throwIfAborted();
      this.checkWritable(loc);
      // Buffered whole before it is stored: readers see the old content or the new, never a part.
      for await (const chunk of options.signal ? addAbortSignal(options.signal, source) : source) {
        chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array));
      }
      this.checkWritable(loc);
    } catch (err) {
      source.destroy();
      throw storageError('write', loc, err);
    }
    const bytes = Buffer.concat(chunks);
    this.put(loc, bytes);
    return { bytes: bytes.length };
  }

  async create(loc: Location, body: string, signal?: AbortSignal): Promise<boolean> {
    await io();
    signal?.throwIfAborted();
    this.checkWritable(loc);
    // Looked at and written in one step: of two writers, one wins.
    if (this.files.has(formatLocation(loc))) return false;
    this.put(loc, Buffer.from(body));
    return true;
  }

  async *list(prefix: Location, signal?: AbortSignal): AsyncGenerator<ListedFile> {
    await io();
    // Taken at the start; a file removed meanwhile is skipped, as a listing of a folder would.
    for (const key of this.below(prefix)) {
      signal?.throwIfAborted();
      const file = this.files.get(key);
      if (file) yield { location: file.location, ...info(file) };
    }
  }

  async isEmpty(prefix: Location, signal?: AbortSignal): Promise<boolean> {
    await io();
    signal?.throwIfAborted();
    // On disk, a file where the folder would be is something there.
    if (prefix.kind === 'file' && this.files.has(formatLocation(prefix))) return false;
    return this.below(prefix).length === 0;
  }

  async remove(loc: Location): Promise<void> {
    await io();
    this.files.delete(formatLocation(loc));
  }

  async removeFiles(prefix: Location, which: (name: string) => boolean): Promise<void> {
    await io();
    const folder = folderKey(prefix);
    for (const key of this.below(prefix)) if (which(key.slice(folder.length))) this.files.delete(key);
  }

  async whyUnwritable(prefix: Location, signal?: AbortSignal): Promise<string | undefined> {
    await io();
    signal?.throwIfAborted();
    if (prefix.kind === 's3') return undefined; // every bucket exists
    const blocking = this.fileOnPath(prefix.path);
    return blocking === undefined ? undefined : `${blocking} is a file, not a folder`;
  }

  /** Memory has no disk to fill. */
  async freeBytes(): Promise<undefined> {
    await io();
    return undefined;
  }

  close(): void {
    // Nothing to release.
  }

  private file(loc: Location): MemoryFile {
    const file = this.files.get(formatLocation(loc));
    if (file) return file;
    if (loc.kind === 'file' && this.below(loc).length > 0) {
      throw new NotFoundError(`${loc.path}: is a directory, not a file; name a file in it instead`);
    }
    throw new NotFoundError(`${formatLocation(loc)}: no such file or object`);
  }

  /** The keys below a folder, whole folders only (`runs/1` covers `runs/1/...`, never `runs/10/...`), in key order. */
  private below(prefix: Location): string[] {
    const folder = folderKey(prefix);
    return [...this.files.keys()].filter((key) => key.startsWith(folder) && key !== folder).sort(byBytes);
  }

  /** Refuses a write a disk would refuse (a file in the way of its folder, a folder where the file would be), and the failures asked for. */
  private checkWritable(loc: Location): void {
    if (this.failing?.(loc)) throw new BatchScorerError('E_STORAGE', `write ${formatLocation(loc)}: simulated storage failure`);
    if (loc.kind === 's3') return;
    const blocking = this.fileOnPath(path.dirname(loc.path));
    if (blocking !== undefined) {
      throw new BatchScorerError('E_STORAGE_REFUSED', `cannot make the folder ${path.dirname(loc.path)}: ${blocking} is a file, not a folder`);
    }
    if (this.below(loc).length > 0) throw new BatchScorerError('E_STORAGE_REFUSED', `write ${loc.path}: is a directory`);
  }

  /** The nearest file standing at a folder's path or one of its parents, if any. */
  private fileOnPath(folder: string): string | undefined {
    for (let at = folder; ; at = path.dirname(at)) {
      if (this.files.has(at)) return at;
      if (path.dirname(at) === at) return undefined;
    }
  }

  private put(loc: Location, bytes: Buffer): void {
    this.lastMtimeMs = Math.max(Date.now(), this.lastMtimeMs + 1);
    this.written.push(formatLocation(loc));
    // S3 keeps LastModified to the second, and tells versions apart by ETag.
    const s3 = loc.kind === 's3';
    this.files.set(formatLocation(loc), {
      location: { ...loc },
      bytes,
      mtimeMs: s3 ? Math.floor(this.lastMtimeMs / 1000) * 1000 : this.lastMtimeMs,
      ...(s3 && { etag: `"${createHash('md5').update(bytes).digest('hex')}"` }),
    });
  }
}

function info(file: MemoryFile): ObjectInfo {
  return { size: file.bytes.length, mtimeMs: file.mtimeMs, ...(file.etag !== undefined && { etag: file.etag }) };
}

/** A folder's key with its trailing separator, so that it matches whole folders only. */
function folderKey(prefix: Location): string {
  const key = formatLocation(prefix);
  return key.endsWith('/') ? key : `${key}/`;
}

/** Byte order of keys, the order S3 lists them in and local storage follows. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** As local storage and S3 check `expect`: the size, then the ETag where both have one, else the modification time. */
function checkUnchanged(loc: Location, file: MemoryFile, expect: ObjectInfo | undefined): void {
  if (expect === undefined) return;
  const what =
    file.bytes.length !== expect.size
      ? `size ${expect.size} is now ${file.bytes.length}`
      : expect.etag !== undefined && file.etag !== undefined
        ? expect.etag !== file.etag && `ETag ${expect.etag} is now ${file.etag}`
        : expect.mtimeMs !== undefined && file.mtimeMs !== expect.mtimeMs && 'its modification time moved';
  if (what) throw new InputError(`${formatLocation(loc)} changed while the run was reading it (${what})`, 'E_INPUT_CHANGED');
}

/** As local storage maps failures: its own errors and aborts stand, anything else is a refused write naming the location. */
function storageError(op: string, loc: Location, err: unknown): Error {
  if (err instanceof BatchScorerError || isAbortError(err)) return err as Error;
  const reason = err instanceof Error ? err.message : String(err);
  return new BatchScorerError('E_STORAGE_REFUSED', `${op} ${formatLocation(loc)}: ${reason}`, { cause: err });
}
