import pLimit from 'p-limit';
import { errorCode, errorMessage, RunFolderError } from '../errors.js';
import type { Logger } from '../log.js';
import { readClaim, readManifest, readOpenAttempt } from '../scoring/index.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { claimedRun, newestFirst, resumedRun, settledRun, type AttemptFacts, type ClaimFacts, type FolderRun } from './folder-run.js';
import { addListed, TOLD_BY, type ListedFolder, type RunFileKind } from './run-files-listed.js';

/** How old the index may be when it is read, by default (`serve --index-refresh`). */
export const INDEX_REFRESH_MS = 5_000;

/** Run files a refresh reads at once. */
const READS_AT_ONCE = 8;

export interface RunIndexOptions {
  /** Where the run folders are read from (serve's storage, guarded by the deployment policy). */
  storage: Storage;
  /** OUTPUT_ROOTS: the folders and prefixes whose run folders, at any depth, the index holds. */
  roots: readonly Location[];
  /**
   * How old the index may be when read, in ms: a read finding it older rescans first (lists every
   * file under the roots, and reads only the run files that are new or changed since).
   */
  refreshMs: number;
  log: Logger;
}

/** The runs of the folders at one scan: newest first, and by run id. */
export interface RunSnapshot {
  runs: readonly FolderRun[];
  get(runId: string): FolderRun | undefined;
}

/** What a folder's run files said, by kind. */
interface RunFiles {
  manifest?: FolderRun;
  claim?: ClaimFacts;
  attempt?: AttemptFacts;
}

/** What the index keeps of a run folder from one scan to the next: what its run files said, and the fingerprints of those read. */
interface KeptFolder {
  /** The root (its index in `roots`) the folder was found under. */
  root: number;
  read: Partial<Record<RunFileKind, string>>;
  files: RunFiles;
  /** The run the folder tells of, if it tells of one. */
  run?: FolderRun;
}

/** How each run file is read: a manifest or a claim naming another run than the folder's is no run's (E_RUN_STATE). */
const READERS: { [K in RunFileKind]: (storage: Storage, listed: ListedFolder, signal: AbortSignal) => Promise<RunFiles[K]> } = {
  manifest: async (storage, listed, signal) => {
    const manifest = await readManifest(storage, listed.folder, signal);
    if (!manifest) return undefined;
    try {
      return settledRun(namingItsFolder(manifest, listed), listed.folder);
    } catch (err) {
      if (err instanceof RunFolderError) throw err;
      throw new RunFolderError(`its result cannot be told: ${errorMessage(err)}`, err);
    }
  },
  claim: async (storage, listed, signal) => {
    const claim = await readClaim(storage, listed.folder, signal);
    return claim && namingItsFolder(claim, listed);
  },
  attempt: (storage, listed, signal) => readOpenAttempt(storage, listed.folder, signal),
};

function namingItsFolder<T extends { runId: string }>(file: T, { runId }: ListedFolder): T {
  if (file.runId !== runId) throw new RunFolderError(`it names run ${file.runId}, not ${runId}, the run its folder is named after`);
  return file;
}

/**
 * The runs whose folders are under OUTPUT_ROOTS, `score` runs and runs Redis no longer has
 * included: what `serve` lists beside the queue (see knownRuns). A folder is a run's when it holds
 * a manifest.json (the run ended) or a `_work/claim.json` (it began) naming the run id the folder
 * is named after. Per run it keeps a small summary (its RunStatus), never a manifest whole. A read
 * finding the index older than `refreshMs` rescans: the roots are listed, and only the run files
 * new or changed since the last scan (by size, modification time and ETag) are read.
 */
export class RunIndex {
  private folders = new Map<string, KeptFolder>();
  private current: RunSnapshot = snapshotOf([]);
  private scannedAt = -Infinity;
  private scanning?: Promise<void>;
  private readonly stop = new AbortController();

  constructor(private readonly options: RunIndexOptions) {}

  /** The runs of the folders, at most `refreshMs` old (rescanned first when older). */
  async snapshot(): Promise<RunSnapshot> {
    if (Date.now() - this.scannedAt >= this.options.refreshMs) await this.refresh();
    return this.current;
  }

  /** Rescans now; a call while a scan is under way waits for that one. */
  refresh(): Promise<void> {
    return (this.scanning ??= this.scan().finally(() => (this.scanning = undefined)));
  }

  /** Stops a scan under way (its readers get an AbortError). */
  close(): void {
    this.stop.abort();
  }

  private async scan(): Promise<void> {
    const { storage, roots, log } = this.options;
    const { signal } = this.stop;
    const listed = new Map<string, ListedFolder & { root: number }>();
    const next = new Map<string, KeptFolder>();
    for (const [root, loc] of roots.entries()) {
      const found = new Map<string, ListedFolder>();
      try {
        for await (const file of storage.list(loc, signal)) addListed(found, file);
      } catch (err) {
        if (signal.aborted) throw err;
        log.warn({ err, root: formatLocation(loc) }, 'could not list the run folders under an OUTPUT_ROOTS root: its runs are shown as last seen');
        for (const [key, kept] of this.folders) if (kept.root === root) next.set(key, kept);
        continue;
      }
      // Roots inside roots list a folder twice: the first root keeps it.
      for (const [key, folder] of found) if (!listed.has(key)) listed.set(key, { ...folder, root });
    }
    const reads = pLimit(READS_AT_ONCE);
    await Promise.all([...listed].map(([key, folder]) => reads(async () => next.set(key, await this.reread(this.folders.get(key), folder, signal)))));
    this.folders = next;
    this.current = snapshotOf(next.values());
    this.scannedAt = Date.now();
  }

  /** A listed folder's run files: those unchanged since the last scan as they were, the others read again (a claim only while no manifest stands beside it). */
  private async reread(before: KeptFolder | undefined, listed: ListedFolder & { root: number }, signal: AbortSignal): Promise<KeptFolder> {
    const kept: KeptFolder = { root: listed.root, read: {}, files: {} };
    for (const kind of TOLD_BY) {
      if (kind === 'claim' && listed.files.manifest !== undefined) continue;
      await this.rereadFile(kind, before, kept, listed, signal);
    }
    kept.run = folderRun(listed.folder, kept.files);
    return kept;
  }

  private async rereadFile<K extends RunFileKind>(
    kind: K,
    before: KeptFolder | undefined,
    kept: KeptFolder,
    listed: ListedFolder,
    signal: AbortSignal,
  ): Promise<void> {
    const print = listed.files[kind];
    if (print === undefined) return;
    if (before?.read[kind] === print) {
      kept.read[kind] = print;
      kept.files[kind] = before.files[kind];
      return;
    }
    try {
      kept.files[kind] = await READERS[kind](this.options.storage, listed, signal);
      kept.read[kind] = print;
    } catch (err) {
      if (signal.aborted) throw err;
      // A file that is no run's is not read again until it changes; one the storage failed to give is tried again at the next scan.
      if (errorCode(err) === 'E_RUN_STATE') kept.read[kind] = print;
      else kept.files[kind] = before?.files[kind];
      this.options.log.warn(
        { err, folder: formatLocation(listed.folder), file: kind },
        'a run file under OUTPUT_ROOTS could not be read: the run list leaves it out',
      );
    }
  }
}

/** The run a folder tells of: ended (its manifest), resumed since (an attempt newer than its manifest), or under way (a claim alone). */
function folderRun(folder: Location, { manifest, claim, attempt }: RunFiles): FolderRun | undefined {
  if (manifest) return attempt && attempt.attempt > manifest.attempt ? resumedRun(manifest, attempt) : manifest;
  return claim && claimedRun(folder, claim, attempt);
}

/** The folders' runs, newest first; of two folders of one run id (two outputs), the newer run. */
function snapshotOf(folders: Iterable<KeptFolder>): RunSnapshot {
  const byId = new Map<string, FolderRun>();
  for (const { run } of folders) {
    if (!run) continue;
    const had = byId.get(run.status.runId);
    if (!had || newestFirst(run.status, had.status) < 0) byId.set(run.status.runId, run);
  }
  const runs = [...byId.values()].sort((a, b) => newestFirst(a.status, b.status));
  return { runs, get: (runId) => byId.get(runId) };
}
