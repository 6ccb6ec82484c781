import { isSettled } from '../scoring/index.js';
import type { RunListOptions, RunQueueCalls, RunStatus } from '../queue/index.js';
import { newestFirst, type FolderRun } from './folder-run.js';
import type { RunIndex, RunSnapshot } from './run-index.js';

/** Queue lookups of folder runs a list makes at once: the runs the queue did not list, to learn whether it has them. */
const LOOKUPS_AT_ONCE = 25;

/** A run as the queue and its folder together tell of it. */
export interface KnownRun {
  status: RunStatus;
  /** Whether the queue has the run: if not, only its folder tells of it (a `score` run, or one Redis no longer has). */
  onQueue: boolean;
}

/** The runs `serve` lists and shows: those of the queue and those of the run folders, merged (see knownRuns). */
export interface KnownRuns {
  get(runId: string): Promise<RunStatus | undefined>;
  find(runId: string): Promise<KnownRun | undefined>;
  /** As RunQueue.list: newest first, narrowed to a state and a pipeline, from `offset` on, at most `limit`. */
  list(options?: RunListOptions): Promise<RunStatus[]>;
}

/**
 * The one place the queue and the run folders (see RunIndex) are merged, for the run API and the
 * pages alike. A run the queue has queued, running or cancelling is as the queue says (live). A
 * settled run is as its folder's record says (the record wins: a run judged with the CLI while
 * Redis was away), with the queue's own facts (its job's attempts, enqueue time, priority, options
 * and progress) where the queue has it; unless the queue knows a later attempt than the record.
 * Runs only in folders (`score` runs, runs Redis no longer has) are as their folders say. Without
 * an index (no OUTPUT_ROOTS), the queue alone answers.
 */
export function knownRuns(queue: Pick<RunQueueCalls, 'get' | 'list'>, index?: RunIndex): KnownRuns {
  const find = async (runId: string): Promise<KnownRun | undefined> => {
    const [queued, snapshot] = await Promise.all([queue.get(runId), index?.snapshot()]);
    const status = merged(queued, snapshot?.get(runId));
    return status && { status, onQueue: queued !== undefined };
  };
  return {
    find,
    get: async (runId) => (await find(runId))?.status,
    list: async (options = {}) => (index ? mergedList(queue, await index.snapshot(), options) : queue.list(options)),
  };
}

/**
 * The merged list's page. Every run the queue lists in the state asked is merged with its record;
 * then the folders' runs in that state (by their records) that the queue did not list, newest
 * first, each looked up on the queue (it may be live there, or have facts to add), until enough
 * of them pass to fill the page: any older one would fall past it.
 */
async function mergedList(queue: Pick<RunQueueCalls, 'get' | 'list'>, snapshot: RunSnapshot, options: RunListOptions): Promise<RunStatus[]> {
  const { limit = 20, offset = 0, state, pipeline } = options;
  const want = offset + limit;
  const passes = (s: RunStatus) => (state === undefined || s.state === state) && (pipeline === undefined || s.pipeline === pipeline);
  const listed = await queue.list({ limit: want, state, pipeline });
  const shown = listed.map((q) => merged(q, snapshot.get(q.runId))!).filter(passes);
  const onQueue = new Set(listed.map((q) => q.runId));
  const candidates = snapshot.runs.filter((r) => !onQueue.has(r.status.runId) && passes(r.status));
  let fromFolders = 0;
  for (let at = 0; at < candidates.length && fromFolders < want;) {
    const batch = candidates.slice(at, at + Math.min(LOOKUPS_AT_ONCE, want - fromFolders));
    at += batch.length;
    const found = await Promise.all(batch.map(async (r) => merged(await queue.get(r.status.runId), r)!));
    const kept = found.filter(passes);
    shown.push(...kept);
    fromFolders += kept.length;
  }
  return shown.sort(newestFirst).slice(offset, want);
}

/** A run as the queue (`queued`) and its folder (`record`) tell of it: see knownRuns. */
function merged(queued: RunStatus | undefined, record: FolderRun | undefined): RunStatus | undefined {
  if (!record) return queued;
  if (!queued) return record.status;
  if (!isSettled(queued.state) || !isSettled(record.status.state) || !recordIsLatest(queued, record)) return queued;
  return {
    ...record.status,
    attempts: queued.attempts,
    enqueuedAt: queued.enqueuedAt,
    priority: queued.priority,
    options: queued.options,
    ...(queued.progress ? { progress: queued.progress } : {}),
  };
}

/**
 * Whether a settled run's record tells of the queue's last attempt, or a later one: by the
 * attempts' numbers where the queue kept a result, else (a job that stalled, or whose result was
 * lost) by time, a record written before the job was enqueued being an earlier attempt's.
 */
function recordIsLatest(queued: RunStatus, record: FolderRun): boolean {
  if (queued.result) return record.attempt >= queued.result.attempt;
  return Date.parse(record.status.finishedAt ?? '') >= Date.parse(queued.enqueuedAt);
}
