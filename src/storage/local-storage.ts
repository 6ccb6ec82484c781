import { randomBytes } from 'node:crypto';
import { constants, createWriteStream, type Dirent, type Stats } from 'node:fs';
import { access, link, mkdir, open, readdir, readFile, rename, rmdir, stat, statfs, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { addAbortSignal, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pLimit, { type LimitFunction } from 'p-limit';
import { BatchScorerError, InputError, isAbortError, NotFoundError } from '../errors.js';
import type { FileLocation } from './location.js';
import type { ListedFile, ObjectInfo, ReadOptions, WriteOptions } from './storage-types.js';

/** Names of half-written files (`<name>.tmp-<random>`); they are not files yet, so `list` skips them. */
const TEMP_SUFFIX = /\.tmp-[0-9a-f]{12}$/;

/** Files `removeFiles` removes at once: enough to keep the thread pool's four threads busy. */
const REMOVES_AT_ONCE = 16;

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
    if (signal === undefined) return stream;
    // Aborted before the caller, a microtask away, reads it, the stream would throw its AbortError
    // with no listener yet, uncaught; it keeps the error, and the caller's first read throws it.
    stream.on('error', () => undefined);
    return addAbortSignal(signal, stream);
  }

  async readText(loc: FileLocation, signal?: AbortSignal): Promise<string> {
    try {
      return await readFile(loc.path, { encoding: 'utf8', signal });
    } catch (err) {
      throw storageError('read', loc, err);
    }
  }

  async write(loc: FileLocation, body: Readable | string | Uint8Array, options: WriteOptions = {}): Promise<{ bytes: number }> {
    const temp = tempPath(loc);
    try {
      await makeFolders(path.dirname(loc.path));
      const out = createWriteStream(temp, { flags: 'wx', flush: true });
      await pipeline(toReadable(body), out, { signal: options.signal });
      await rename(temp, loc.path);
      return { bytes: out.bytesWritten };
    } catch (err) {
      if (body instanceof Readable) body.destroy();
      await removeTemp(temp);
      throw storageError('write', loc, err);
    }
  }

  async create(loc: FileLocation, body: string, signal?: AbortSignal): Promise<boolean> {
    const temp = tempPath(loc);
    try {
      await makeFolders(path.dirname(loc.path));
      await writeFile(temp, body, { flag: 'wx', flush: true, signal });
      // Unlike rename, link fails where the name exists: the file appears whole, and only once.
      await link(temp, loc.path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw storageError('write', loc, err);
    } finally {
      await removeTemp(temp);
    }
  }

  async *list(prefix: FileLocation, signal?: AbortSignal): AsyncGenerator<ListedFile & { location: FileLocation }> {
    yield* listBelow(prefix, prefix.path, signal);
  }

  async isEmpty(prefix: FileLocation, signal?: AbortSignal): Promise<boolean> {
    return onlyFolders(prefix, prefix.path, signal);
  }

  async remove(loc: FileLocation): Promise<void> {
    await removeFile(loc.path);
  }

  /** The bytes an unprivileged process may still write on the filesystem of the folder, or of the nearest part of its path that exists. */
  async freeBytes(prefix: FileLocation, signal?: AbortSignal): Promise<number> {
    const fs = await atNearestExisting(prefix, signal, (at) => statfs(at));
    return fs.bavail * fs.bsize;
  }

  async whyUnwritable(prefix: FileLocation, signal?: AbortSignal): Promise<string | undefined> {
    return atNearestExisting(prefix, signal, whyFolderUnwritable);
  }

  async removeFiles(prefix: FileLocation, which: (name: string) => boolean): Promise<void> {
    await removeBelow(prefix, prefix.path, '', which, pLimit(REMOVES_AT_ONCE));
  }
}

/** A write's half-written file, beside the file it becomes. */
function tempPath(loc: FileLocation): string {
  return `${loc.path}.tmp-${randomBytes(6).toString('hex')}`;
}

/**
 * Removes a write's half-written file. Tidying only: its failure (the folder gone, or turned into a
 * file) must never replace why the write failed. One left behind is skipped by `list`, and goes
 * with its file in `removeFiles`.
 */
async function removeTemp(temp: string): Promise<void> {
  await removeFile(temp).catch(() => undefined);
}

function folderError(folder: string, reason: string, cause?: unknown): BatchScorerError {
  return new BatchScorerError('E_STORAGE_REFUSED', `cannot make the folder ${folder}: ${reason}`, { cause });
}

/**
 * Makes a folder and its missing parents, one level at a time from the nearest one that exists.
 * Node's recursive mkdir retries for ever where a parent exists but mkdir answers ENOENT in it (as
 * in /proc, as root): here that fails at once, as does a file in the way. A folder another writer
 * makes meanwhile (EEXIST) is fine.
 */
async function makeFolders(folder: string): Promise<void> {
  const missing: string[] = [];
  for (let at = folder; ; at = path.dirname(at)) {
    let info: Stats;
    try {
      info = await stat(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'ENOENT' || code === 'ENOTDIR') && path.dirname(at) !== at) {
        missing.push(at);
        continue;
      }
      throw err;
    }
    if (!info.isDirectory()) throw folderError(folder, `${at} is a file, not a folder`);
    break;
  }
  for (const at of missing.reverse()) {
    try {
      await mkdir(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && (await stat(at)).isDirectory()) continue;
      if (code === 'EEXIST') throw folderError(folder, `${at} is a file, not a folder`, err);
      // ENOENT though the parent was just seen or made: this filesystem makes no folders there (/proc).
      if (code === 'ENOENT') throw folderError(folder, `${path.dirname(at)} takes no new folders (mkdir ${at}: ENOENT)`, err);
      // No permission, a read-only filesystem (/sys): said of the folder; a passing failure stays retriable.
      if (code === undefined || !TRANSIENT.has(code)) throw folderError(folder, err instanceof Error ? err.message : String(err), err);
      throw err;
    }
  }
}

/**
 * The entries of a folder, or what stands there instead: nothing (`missing`) or a file
 * (`not a folder`); any other failure is the storage error of `op` on the prefix.
 */
async function folderEntries(prefix: FileLocation, folder: string, op: 'list' | 'remove'): Promise<Dirent[] | 'missing' | 'not a folder'> {
  try {
    return await readdir(folder, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing';
    if (code === 'ENOTDIR') return 'not a folder';
    throw storageError(op, prefix, err);
  }
}

/**
 * The files below `folder`, lazily (asking whether there is any reads one folder per level), in
 * byte order of their path below the prefix, the order S3 lists keys in: a folder sorts as its name
 * followed by `/`.
 */
async function* listBelow(prefix: FileLocation, folder: string, signal?: AbortSignal): AsyncGenerator<ListedFile & { location: FileLocation }> {
  signal?.throwIfAborted();
  const entries = await folderEntries(prefix, folder, 'list');
  // A missing prefix lists nothing, as on S3; a folder removed meanwhile is skipped.
  if (typeof entries === 'string') return;
  const sorted = entries
    .map((entry) => ({ entry, key: Buffer.from(entry.isDirectory() ? `${entry.name}/` : entry.name) }))
    .sort((a, b) => Buffer.compare(a.key, b.key));
  for (const { entry } of sorted) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) {
      yield* listBelow(prefix, full, signal);
    } else if ((entry.isFile() || entry.isSymbolicLink()) && !TEMP_SUFFIX.test(entry.name)) {
      const info = await stat(full).catch(() => undefined); // a file removed meanwhile, or a dangling link
      if (info?.isFile()) yield { location: { kind: 'file', path: full }, size: info.size, mtimeMs: info.mtimeMs };
    }
  }
}

/** Whether nothing but folders lies below `folder` (a missing one included); stops at the first entry of another kind. */
async function onlyFolders(prefix: FileLocation, folder: string, signal?: AbortSignal): Promise<boolean> {
  signal?.throwIfAborted();
  const entries = await folderEntries(prefix, folder, 'list');
  // A file where the folder would be is something there.
  if (typeof entries === 'string') return entries === 'missing';
  for (const entry of entries) {
    if (!entry.isDirectory() || !(await onlyFolders(prefix, path.join(folder, entry.name), signal))) return false;
  }
  return true;
}

/**
 * Removes the files below `folder` that `which` names (by their path below the prefix, `below`
 * being the folder's), then `folder` itself if that left it empty; answers whether it did. A
 * folder holding anything else, or that held nothing to begin with, stays. Its entries are removed
 * side by side, at most REMOVES_AT_ONCE files at a time (`removes`): one after another, a run's
 * segment files took a round trip to the thread pool each, about 50 ms of a 480k-row run's end.
 * Every removal settles before the first failure is thrown.
 */
async function removeBelow(prefix: FileLocation, folder: string, below: string, which: (name: string) => boolean, removes: LimitFunction): Promise<boolean> {
  const entries = await folderEntries(prefix, folder, 'remove');
  if (typeof entries === 'string') return false;
  // Each entry comes to true once it is gone (a folder emptied and removed), false where something stays.
  const settled = await Promise.allSettled(
    entries.map(async (entry) => {
      const name = below === '' ? entry.name : `${below}/${entry.name}`;
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) return removeBelow(prefix, full, name, which, removes);
      return which(name.replace(TEMP_SUFFIX, '')) ? removes(() => removeFile(full)) : false;
    }),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  const gone = settled.map((s) => s.status === 'fulfilled' && s.value);
  if (gone.includes(false) || !gone.includes(true)) return false;
  try {
    await rmdir(folder);
    return true;
  } catch (err) {
    // Something was put in it meanwhile: it stays.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return false;
    throw storageError('remove', prefix, err);
  }
}

/** Removes one file; one already gone is fine. `unlink`, not `rm`: rm looks the file up twice first. */
async function removeFile(full: string): Promise<true> {
  try {
    await unlink(full);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw storageError('remove', { kind: 'file', path: full }, err);
  }
  return true;
}

/**
 * `look` at a folder, or at the nearest part of its path that exists: a folder is made on the
 * first write, so what it will be on is what counts. A failure other than a missing part is
 * storage's E_* for the folder.
 */
async function atNearestExisting<T>(prefix: FileLocation, signal: AbortSignal | undefined, look: (at: string) => Promise<T>): Promise<T> {
  for (let at = prefix.path; ; at = path.dirname(at)) {
    signal?.throwIfAborted();
    try {
      return await look(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'ENOENT' || code === 'ENOTDIR') && path.dirname(at) !== at) continue;
      throw storageError('check', prefix, err);
    }
  }
}

/** Why this process cannot write in the folder `at`, which exists; undefined when it can. */
async function whyFolderUnwritable(at: string): Promise<string | undefined> {
  let info: Stats;
  try {
    info = await stat(at);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EACCES') return `no permission to reach ${at}`;
    throw err;
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
    throw err;
  }
}
