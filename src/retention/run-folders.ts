import pLimit from 'p-limit';
import { runOptionsSchema } from '../config/index.js';
import { errorMessage, RunFolderError } from '../errors.js';
import { type Manifest, ownsRunFolder, readManifest, readOpenAttempt } from '../scoring/index.js';
import { formatLocation, joinLocation, type Location, type Storage } from '../storage/index.js';

/** Folders read at once. */
const READS_AT_ONCE = 8;

/** What a folder right below `--out` is, as its files tell. */
export type FolderStanding =
  /** Not batch-scorer's: no run file in it names the run its name says, or its name is no run id. */
  | { kind: 'foreign'; why: string }
  /** A run folder whose manifest or open attempt cannot be read (damaged, or of a later release). */
  | { kind: 'unreadable'; why: string }
  /** A run folder without a manifest: its run is under way, or stopped before it ended. */
  | { kind: 'unfinished' }
  /** A run folder whose run was resumed since its manifest was written: attempt `attempt` is under way. */
  | { kind: 'resumed'; manifest: Manifest; attempt: number }
  /** A run folder whose manifest records the run's last attempt. */
  | { kind: 'finished'; manifest: Manifest };

/** A folder right below `--out`: its name, its files (every file below it, at any depth) and its standing. */
export interface RunFolder {
  name: string;
  folder: Location;
  files: number;
  bytes: number;
  standing: FolderStanding;
}

const runIdSchema = runOptionsSchema.shape.runId.unwrap();

/**
 * The folders right below `out`, each told apart as a run folder of batch-scorer (one of its run
 * files names the run the folder is named after, see ownsRunFolder) and how far its run got, or
 * as another's. Files right below `out` are no folder, and are left out. Lists every file below
 * `out` once (one listing of the prefix on S3), keeping only counts per folder, then reads each
 * folder's run files.
 */
export async function runFolders(storage: Storage, out: Location, signal?: AbortSignal): Promise<RunFolder[]> {
  // What every location below `out` begins with: `out` and its separator.
  const base = formatLocation(joinLocation(out, '_')).slice(0, -1);
  const sizes = new Map<string, { files: number; bytes: number }>();
  for await (const file of storage.list(out, signal)) {
    const below = formatLocation(file.location).slice(base.length);
    const cut = below.indexOf('/');
    if (cut <= 0) continue;
    const name = below.slice(0, cut);
    const seen = sizes.get(name) ?? { files: 0, bytes: 0 };
    seen.files += 1;
    seen.bytes += file.size;
    sizes.set(name, seen);
  }
  const reads = pLimit(READS_AT_ONCE);
  const found = [...sizes].map(([name, size]) =>
    reads(async () => {
      const folder = joinLocation(out, name);
      return { name, folder, ...size, standing: await standing(storage, folder, name, signal) };
    }),
  );
  return Promise.all(found);
}

/** What one folder is (see FolderStanding). */
async function standing(storage: Storage, folder: Location, name: string, signal?: AbortSignal): Promise<FolderStanding> {
  if (!runIdSchema.safeParse(name).success) return { kind: 'foreign', why: 'its name is not a run id' };
  try {
    if (!(await ownsRunFolder(storage, folder, name, signal))) {
      return { kind: 'foreign', why: `not a batch-scorer run folder: no _work/claim.json, _work/run.json or manifest.json in it names run ${name}` };
    }
    const manifest = await readManifest(storage, folder, signal);
    if (!manifest) return { kind: 'unfinished' };
    // As the run index tells it (see folderRun): an attempt newer than the manifest is a resume under way.
    const attempt = await readOpenAttempt(storage, folder, signal);
    const recorded = manifest.attempt ?? 1;
    if (attempt && attempt.attempt > recorded) return { kind: 'resumed', manifest, attempt: attempt.attempt };
    return { kind: 'finished', manifest };
  } catch (err) {
    if (err instanceof RunFolderError) return { kind: 'unreadable', why: errorMessage(err) };
    throw err;
  }
}
