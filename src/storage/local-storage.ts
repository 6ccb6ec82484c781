import { randomBytes } from 'node:crypto';
import { constants, createWriteStream, type Stats } from 'node:fs';
import { access, mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { addAbortSignal, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BatchScorerError, InputError, isAbortError, NotFoundError } from '../errors.js';
import type { FileLocation } from './location.js';
import type { ListedFile, ObjectInfo, ReadOptions, WriteOptions } from './storage-types.js';

/** Names of half-written files (`<name>.tmp-<random>`); they are not files yet, so `list` skips them. */
const TEMP_SUFFIX = /\.tmp-[0-9a-f]{12}$/;

/** Failures worth retrying: the disk or the process is busy, not the request wrong. */
const TRANSIENT = new Set(['EAGAIN', 'EBUSY', 'EMFILE', 'ENFILE', 'EIO', 'ETIMEDOUT', 'ESTALE']);

function notFound(loc: FileLocation, reason = 'no such file or object'): NotFoundError {
  return new NotFoundError(`${loc.path}: ${reason}`);
}

function notAFile(loc: FileLocation, info: Stats): NotFoundError {
  return notFound(loc, info.isDirectory() ? 'is a directory, not a file; name a file in it instead' : 'is not a regular file');
}

function storageError(op: string, loc: FileLocation, err: unknown): Error {
  if (err instanceof BatchScorerError || isAbortError(err)) return err as Error;
  const code = (err as NodeJS.ErrnoException).code;
  if (op !== 'write' && (code === 'ENOENT' || code === 'ENOTDIR')) return notFound(loc);
  const reason = err instanceof Error ? err.message : String(err);
  return new BatchScorerError(code !== undefined && TRANSIENT.has(code) ? 'E_STORAGE' : 'E_STORAGE_REFUSED', `${op} ${loc.path}: ${reason}`, { cause: err });
}

function checkUnchanged(loc: FileLocation, actual: Stats, expect: ObjectInfo | undefined): void {
  if (expect === undefined) return;
  const sizeDiffers = actual.size !== expect.size;
  if (sizeDiffers || (expect.mtimeMs !== undefined && actual.mtimeMs !== expect.mtimeMs)) {
    const what = sizeDiffers ? `size ${expect.size} is now ${actual.size}` : 'its modification time moved';
    throw new InputError(`${loc.path} changed while the run was reading it (${what})`, 'E_INPUT_CHANGED');
  }
}

function toReadable(body: Readable | string | Uint8Array): Readable {
  return body instanceof Readable ? body : Readable.from([typeof body === 'string' ? Buffer.from(body) : body]);
}

/** Local disk; `etag` is never set, changes are detected by size and mtime. */
export class LocalStorage {
  async stat(loc: FileLocation, signal?: AbortSignal): Promise<ObjectInfo> {
    signal?.throwIfAborted();
    let info: Stats;
    try {
      info = await stat(loc.path);
    } catch (err) {
      throw storageError('stat', loc, err);
    }
    if (!info.isFile()) throw notAFile(loc, info);
    return { size: info.size, mtimeMs: info.mtimeMs };
  }

  async read(loc: FileLocation, options: ReadOptions = {}): Promise<Readable> {
    const { start = 0, end, expect, signal } = options;
    signal?.throwIfAborted();
    const handle = await open(loc.path, 'r').catch((err: unknown) => {
      throw storageError('read', loc, err);
    });
    try {
      // Checked on the open handle, so a file replaced after this check is still the one read.
      const info = await handle.stat();
      if (!info.isFile()) throw notAFile(loc, info);
      checkUnchanged(loc, info, expect);
    } catch (err) {
      await handle.close();
      throw storageError('read', loc, err);
    }
    if (end !== undefined && end <= start) {
      await handle.close();
      return Readable.from([]);
    }
    const stream = handle.createReadStream({ start, ...(end !== undefined && { end: end - 1 }) });
    return signal === undefined ? stream : addAbortSignal(signal, stream);
  }

  async readText(loc: FileLocation, signal?: AbortSignal): Promise<string> {
    try {
      return await readFile(loc.path, { encoding: 'utf8', signal });
    } catch (err) {
      throw storageError('read', loc, err);
    }
  }

  async write(loc: FileLocation, body: Readable | string | Uint8Array, options: WriteOptions = {}): Promise<{ bytes: number }> {
    const temp = `${loc.path}.tmp-${randomBytes(6).toString('hex')}`;
    try {
      await mkdir(path.dirname(loc.path), { recursive: true });
      const out = createWriteStream(temp, { flags: 'wx', flush: true });
      await pipeline(toReadable(body), out, { signal: options.signal });
      await rename(temp, loc.path);
      return { bytes: out.bytesWritten };
    } catch (err) {
      if (body instanceof Readable) body.destroy();
      await rm(temp, { force: true });
      throw storageError('write', loc, err);
    }
  }

  async *list(prefix: FileLocation, signal?: AbortSignal): AsyncGenerator<ListedFile & { location: FileLocation }> {
    const files: Array<{ relative: Buffer; path: string; size: number; mtimeMs: number }> = [];
    const folders = [prefix.path];
    for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
      signal?.throwIfAborted();
      let entries;
      try {
        entries = await readdir(folder, { withFileTypes: true });
      } catch (err) {
        // A missing prefix lists nothing, as on S3; a folder removed meanwhile is skipped.
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') continue;
        throw storageError('list', prefix, err);
      }
      for (const entry of entries) {
        const full = path.join(folder, entry.name);
        if (entry.isDirectory()) {
          folders.push(full);
        } else if ((entry.isFile() || entry.isSymbolicLink()) && !TEMP_SUFFIX.test(entry.name)) {
          const info = await stat(full).catch(() => undefined); // a file removed meanwhile, or a dangling link
          if (info?.isFile()) {
            files.push({ relative: Buffer.from(path.relative(prefix.path, full)), path: full, size: info.size, mtimeMs: info.mtimeMs });
          }
        }
      }
    }
    // Byte order of the relative path, the order S3 lists keys in.
    files.sort((a, b) => Buffer.compare(a.relative, b.relative));
    for (const file of files) yield { location: { kind: 'file', path: file.path }, size: file.size, mtimeMs: file.mtimeMs };
  }

  async remove(loc: FileLocation): Promise<void> {
    try {
      await rm(loc.path, { force: true });
    } catch (err) {
      throw storageError('remove', loc, err);
    }
  }

  async whyUnwritable(prefix: FileLocation, signal?: AbortSignal): Promise<string | undefined> {
    // The folder is made on the first write, so what counts is the nearest part of its path that exists.
    for (let at = prefix.path; ; at = path.dirname(at)) {
      signal?.throwIfAborted();
      let info: Stats;
      try {
        info = await stat(at);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if ((code === 'ENOENT' || code === 'ENOTDIR') && path.dirname(at) !== at) continue;
        if (code === 'EACCES') return `no permission to reach ${at}`;
        throw storageError('check', prefix, err);
      }
      if (!info.isDirectory()) return `${at} is a file, not a folder`;
      try {
        // Root passes W_OK on any folder that is not on a read-only filesystem.
        await access(at, constants.W_OK | constants.X_OK);
        return undefined;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EROFS') return `${at} is on a read-only filesystem`;
        if (code === 'EACCES' || code === 'EPERM') return `no permission to write in ${at}`;
        throw storageError('check', prefix, err);
      }
    }
  }

  async removePrefix(prefix: FileLocation): Promise<void> {
    if (path.parse(prefix.path).root === prefix.path) {
      throw new BatchScorerError('E_STORAGE_REFUSED', `remove ${prefix.path}: refusing to delete a filesystem root`);
    }
    try {
      await rm(prefix.path, { recursive: true, force: true });
    } catch (err) {
      throw storageError('remove', prefix, err);
    }
  }
}
