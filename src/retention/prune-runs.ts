import pLimit from 'p-limit';
import { errorMessage } from '../errors.js';
import { type RunState, triggerPipeline } from '../scoring/index.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { planPrune, type PruneReason, type PruneRule, type Verdict } from './prune-plan.js';
import { runFolders } from './run-folders.js';

/** Run folders deleted at once. */
const DELETES_AT_ONCE = 4;

/** Runs the queue is asked about at once. */
const ASKED_AT_ONCE = 16;

/** The queue as `runs prune` asks it: what it has of a run, and forgetting one. */
export interface PruneQueue {
  /** The state the queue has the run in, undefined when it has no job of it. */
  state(runId: string): Promise<RunState | undefined>;
  /**
   * Removes an ended run's jobs and the keys it keeps beside them; false, removing nothing, when
   * the queue has it queued, running or cancelling (resumed since it was looked at).
   */
  forget(runId: string, pipeline: string | undefined): Promise<boolean>;
}

/** What `runs prune` is asked. */
export interface PruneRequest {
  storage: Storage;
  /** The output folder or prefix whose run folders (`<out>/<runId>/`) are pruned. */
  out: Location;
  rule: PruneRule;
  /** The queue the runs may be on; none: runs scored by `score` alone (no Redis asked). */
  queue?: PruneQueue;
  /** Run ids the jobs folder's pipelines name as `baselineRun`. */
  namedBaselines?: ReadonlySet<string>;
  /** Only say what would go. */
  dryRun: boolean;
  /** The time ages are counted to, in ms since the epoch (now, by default). */
  now?: number;
  /** Stops the listing and reading of the folders. */
  signal?: AbortSignal;
}

/** One folder below `--out` and what became of it. */
export interface PrunedFolder {
  /** Its name below `--out` (a run id, for a run folder). */
  name: string;
  /** Where it is, as a location users can open. */
  folder: string;
  /** `deleted`; `would delete` in a dry run; `kept`; `failed`: it was to go, but deleting it failed (see why). */
  action: 'deleted' | 'would delete' | 'kept' | 'failed';
  reason: PruneReason;
  why: string;
  /** The run's state and times, as its manifest says, for a folder that has one. */
  state?: RunState;
  pipeline?: string;
  finishedAt?: string;
  /** The files below it, and their bytes, when it was listed. */
  files: number;
  bytes: number;
}

/** What `runs prune` did (or, in a dry run, would do). */
export interface PruneReport {
  /** `--out`, as a location. */
  out: string;
  dryRun: boolean;
  /** What kept runs: the flags', else the settings'. */
  rule: PruneRule;
  /** Every folder below `--out`, the newest runs first. */
  folders: PrunedFolder[];
  /** Folders deleted (or that would be), their files and bytes. */
  deleted: { folders: number; files: number; bytes: number };
  /** Folders kept, whatever the reason. */
  kept: number;
  /** Folders whose deletion failed: the command exits 1. */
  failed: number;
}

/**
 * Deletes the finished run folders below `out` that the rule lets go (see planPrune), and what
 * Redis keeps of their runs: first the run's jobs and keys (so a run is never left on the queue
 * pointing at a folder that is gone), then its files, its manifest last (a deletion cut short is
 * still a run folder of batch-scorer, finished, and goes at the next prune). Folders that are not
 * batch-scorer's, runs under way, held or that are a pipeline's current baseline are never touched.
 * A run the queue took up again between the look and the deletion is kept. A folder whose
 * deletion fails is reported `failed`, and the others go on.
 */
export async function pruneRuns(request: PruneRequest): Promise<PruneReport> {
  const { storage, out, rule, queue, dryRun, signal } = request;
  const folders = await runFolders(storage, out, signal);
  const queued = new Map<string, RunState>();
  if (queue) {
    const asks = pLimit(ASKED_AT_ONCE);
    const finished = folders.filter((f) => f.standing.kind === 'finished');
    const states = await Promise.all(finished.map((f) => asks(() => queue.state(f.name))));
    for (const [i, state] of states.entries()) if (state !== undefined) queued.set(finished[i].name, state);
  }
  const verdicts = planPrune(folders, rule, { queued, namedBaselines: request.namedBaselines ?? new Set(), now: request.now ?? Date.now() });
  const deletes = pLimit(DELETES_AT_ONCE);
  const shown = await Promise.all(
    verdicts.map((v) => {
      if (v.reason !== 'old') return Promise.resolve(shownFolder(v, 'kept'));
      return dryRun ? Promise.resolve(shownFolder(v, 'would delete')) : deletes(() => deleteRun(storage, v, queue));
    }),
  );
  shown.sort((a, b) => (b.finishedAt ?? '').localeCompare(a.finishedAt ?? '') || a.name.localeCompare(b.name));
  const gone = shown.filter((f) => f.action === 'deleted' || f.action === 'would delete');
  return {
    out: formatLocation(out),
    dryRun,
    rule,
    folders: shown,
    deleted: { folders: gone.length, files: sum(gone, 'files'), bytes: sum(gone, 'bytes') },
    kept: shown.filter((f) => f.action === 'kept').length,
    failed: shown.filter((f) => f.action === 'failed').length,
  };
}

/** Deletes a finished run: its jobs and keys in Redis, then its folder's files, the manifest last. */
async function deleteRun(storage: Storage, verdict: Verdict, queue: PruneQueue | undefined): Promise<PrunedFolder> {
  const { found } = verdict;
  const pipeline = found.standing.kind === 'finished' ? triggerPipeline(found.standing.manifest.trigger ?? undefined) : undefined;
  try {
    if (queue && !(await queue.forget(found.name, pipeline))) {
      return { ...shownFolder(verdict, 'kept'), reason: 'live', why: 'the queue took it up again meanwhile' };
    }
    await storage.removeFiles(found.folder, (name) => name !== 'manifest.json');
    await storage.removeFiles(found.folder, () => true);
    return shownFolder(verdict, 'deleted');
  } catch (err) {
    return { ...shownFolder(verdict, 'failed'), why: `could not delete it: ${errorMessage(err)}` };
  }
}

function shownFolder({ found, reason, why }: Verdict, action: PrunedFolder['action']): PrunedFolder {
  const manifest = found.standing.kind === 'finished' || found.standing.kind === 'resumed' ? found.standing.manifest : undefined;
  const pipeline = manifest && triggerPipeline(manifest.trigger ?? undefined);
  return {
    name: found.name,
    folder: formatLocation(found.folder),
    action,
    reason,
    why,
    ...(manifest && { state: manifest.state, finishedAt: manifest.finishedAt }),
    ...(pipeline !== undefined && { pipeline }),
    files: found.files,
    bytes: found.bytes,
  };
}

function sum(folders: readonly PrunedFolder[], field: 'files' | 'bytes'): number {
  return folders.reduce((n, f) => n + f[field], 0);
}
