import path from 'node:path';
import picomatch from 'picomatch';
import { NotFoundError } from '../errors.js';
import { basename, formatLocation, type Location } from './location.js';
import type { ListedFile, Storage } from './storage-types.js';
import { holdsFiles } from './storage.js';

/** Characters that make an input a glob (`part-*.csv.gz`, `day=2026-11-2[0-9]/*.parquet`). */
const GLOB = /[*?[\]{}]/;

/**
 * What an input names: one file, every file below a folder or prefix (`s3://b/exports/`, a local
 * folder), or every file a glob matches (`s3://b/exports/part-*.csv.gz`). One idea for both stores,
 * so a run over many files is planned the same wherever they live.
 */
export type InputKind = 'file' | 'folder' | 'glob';

/** Whether a location's text is a glob, a folder (ends in `/`) or, as far as its text tells, a file. */
export function inputKind(loc: Location): InputKind {
  const text = loc.kind === 's3' ? loc.key : loc.path;
  if (GLOB.test(text)) return 'glob';
  return text === '' || text.endsWith('/') ? 'folder' : 'file';
}

/**
 * Hidden files, as Spark, Hive and Hadoop leave them beside their part files (`_SUCCESS`,
 * `.part-0.crc`, `_committed_*`): never data, so a folder of part files is read as its parts.
 */
function hidden(name: string): boolean {
  return name.startsWith('_') || name.startsWith('.');
}

/**
 * The files an input names, in byte order of their keys or paths (the order S3 lists them in, and
 * the order a run's rows follow), with what `stat` says of each. A glob or folder that matches
 * nothing is a NotFoundError naming it, as is a missing file (the caller says whose file it was).
 * A folder or prefix named without its trailing slash is read as a folder too, when files lie
 * below it.
 */
export async function listInputFiles(storage: Storage, loc: Location, signal?: AbortSignal): Promise<ListedFile[]> {
  const kind = inputKind(loc);
  if (kind === 'file') {
    try {
      return [{ location: loc, ...(await storage.stat(loc, signal)) }];
    } catch (err) {
      // `s3://b/exports` or a local folder without its slash: a folder, when files lie below it.
      if (!(await holdsFiles(storage, loc, signal))) throw err;
    }
  }
  const { folder, matches } = kind === 'glob' ? globScope(loc) : { folder: loc, matches: () => true };
  const files: ListedFile[] = [];
  for await (const file of storage.list(folder, signal)) {
    const relative = relativeName(folder, file.location);
    if (relative.split('/').some(hidden) || !matches(relative)) continue;
    files.push(file);
  }
  if (files.length === 0) {
    const what = kind === 'glob' ? 'no file matches the glob' : 'the folder holds no files (hidden ones, starting with _ or ., are not read)';
    throw new NotFoundError(`${formatLocation(loc)}: ${what}; check the input`);
  }
  return files;
}

/**
 * The folder to list for a glob (the part before the first segment with a glob character) and a
 * matcher of paths relative to it. Globs match whole names: `*` stays within one folder, `**`
 * crosses folders.
 */
function globScope(loc: Location): { folder: Location; matches: (relative: string) => boolean } {
  const text = loc.kind === 's3' ? loc.key : loc.path.split(path.sep).join('/');
  const segments = text.split('/');
  const first = segments.findIndex((s) => GLOB.test(s));
  const base = segments.slice(0, first).join('/');
  const pattern = segments.slice(first).join('/');
  const folder: Location = loc.kind === 's3' ? { ...loc, key: base === '' ? '' : `${base}/` } : { kind: 'file', path: base === '' ? '/' : base };
  return { folder, matches: picomatch(pattern, { dot: false }) };
}

/** A listed file's path below the folder that was listed, with `/` between names. */
function relativeName(folder: Location, file: Location): string {
  if (file.kind === 's3' && folder.kind === 's3') return file.key.slice(folder.key.length).replace(/^\//, '');
  if (file.kind === 'file' && folder.kind === 'file') return path.relative(folder.path, file.path).split(path.sep).join('/');
  return basename(file);
}
