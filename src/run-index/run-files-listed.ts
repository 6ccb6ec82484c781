import { runOptionsSchema } from '../config/index.js';
import { basename, formatLocation, type ListedFile, type Location, parentLocation } from '../storage/index.js';

/** The files that tell of a run folder: its manifest (the run ended), its claim (the run began) and its open attempt (a run under way, or resumed). */
export const TOLD_BY = ['manifest', 'claim', 'attempt'] as const;
export type RunFileKind = (typeof TOLD_BY)[number];

/** A run folder as a listing found it: where it is, the run id its name gives, and the fingerprint of each of its files that tell of it. */
export interface ListedFolder {
  folder: Location;
  runId: string;
  files: Partial<Record<RunFileKind, string>>;
}

/**
 * Which file of which run folder a listed file is, if it is one that tells of a run:
 * `<folder>/manifest.json`, `<folder>/_work/claim.json` or `<folder>/_work/attempt.json`, in a
 * folder whose name could be a run id. Anything else (outputs, segments) is not.
 */
export function runFileOf(file: ListedFile): { folder: Location; runId: string; kind: RunFileKind } | undefined {
  const name = basename(file.location);
  const parent = parentLocation(file.location);
  const kind =
    name === 'manifest.json'
      ? 'manifest'
      : basename(parent) !== '_work'
        ? undefined
        : name === 'claim.json'
          ? 'claim'
          : name === 'attempt.json'
            ? 'attempt'
            : undefined;
  if (kind === undefined) return undefined;
  const folder = kind === 'manifest' ? parent : parentLocation(parent);
  const runId = basename(folder);
  return runOptionsSchema.shape.runId.unwrap().safeParse(runId).success ? { folder, runId, kind } : undefined;
}

/** What tells a file's versions apart in a listing: its size, modification time and ETag (whichever the storage gives). */
export function fingerprint(file: ListedFile): string {
  return `${file.size}:${file.mtimeMs ?? ''}:${file.etag ?? ''}`;
}

/** Adds a listed file to the folders found so far (keyed by folder), when it tells of a run. */
export function addListed(found: Map<string, ListedFolder>, file: ListedFile): void {
  const of = runFileOf(file);
  if (!of) return;
  const key = formatLocation(of.folder);
  const folder = found.get(key) ?? { folder: of.folder, runId: of.runId, files: {} };
  folder.files[of.kind] = fingerprint(file);
  found.set(key, folder);
}
