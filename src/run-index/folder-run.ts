import type { RunOptionsInput } from '../config/index.js';
import { computeProgress, type Manifest, type readClaim, type readOpenAttempt, runResult, type RunTrigger, triggerPipeline } from '../scoring/index.js';
import { runPriority, type RunStatus } from '../queue/index.js';
import { formatLocation, type Location, parentLocation } from '../storage/index.js';

/** A run as its folder tells of it: its status, shaped as the queue's (see RunStatus), and the attempt that status is of. */
export interface FolderRun {
  status: RunStatus;
  /** The attempt its status tells of: the manifest's, or the one under way (see run-attempt.ts). */
  attempt: number;
}

/** What a folder's `_work/claim.json` says: the run that made the folder, what it was asked, and when. */
export type ClaimFacts = NonNullable<Awaited<ReturnType<typeof readClaim>>>;

/** What a folder's `_work/attempt.json` says: the last attempt opened, and when it began. */
export type AttemptFacts = NonNullable<Awaited<ReturnType<typeof readOpenAttempt>>>;

/**
 * A run that ended, from its manifest: its state and result as the manifest records them, its
 * progress from its counts (none for a run that failed before it counted any), when it started
 * (`enqueuedAt`, the only start a folder knows) and ended.
 */
export function settledRun(manifest: Manifest, folder: Location): FolderRun {
  const result = runResult(manifest);
  const c = manifest.counts;
  const progress =
    c &&
    computeProgress(
      {
        rowsDone: c.rowsIn,
        rowsTotal: manifest.input.rows ?? c.rowsIn,
        rowsQuarantined: c.rowsQuarantined,
        segmentsDone: c.segments,
        segmentsTotal: c.segments,
      },
      c.rowsIn,
      manifest.durationMs,
    );
  const options = manifest.options as RunOptionsInput;
  return {
    attempt: result.attempt,
    status: {
      ...common(folder, manifest.runId, options, manifest.trigger ?? undefined),
      state: manifest.state,
      ...(progress ? { progress } : {}),
      result,
      attempts: result.attempt,
      input: manifest.input.location,
      model: manifest.model.requested,
      enqueuedAt: manifest.startedAt,
      finishedAt: manifest.finishedAt,
    },
  };
}

/** A run under way that has no manifest yet: told from its claim (what it was asked), with no progress, which a run under way keeps out of its folder. */
export function claimedRun(folder: Location, claim: ClaimFacts, attempt: AttemptFacts | undefined): FolderRun {
  const { request } = claim;
  const number = attempt?.attempt ?? 1;
  return {
    attempt: number,
    status: {
      ...common(folder, claim.runId, request.options, request.trigger),
      state: 'running',
      attempts: number,
      input: request.input,
      model: request.model,
      enqueuedAt: attempt?.startedAt ?? claim.claimedAt,
    },
  };
}

/** A run resumed since its manifest was written (its attempt is newer): running, as its last manifest told of it but for how that attempt ended. */
export function resumedRun(last: FolderRun, attempt: AttemptFacts): FolderRun {
  const { progress: _progress, result: _result, finishedAt: _finishedAt, ...before } = last.status;
  return { attempt: attempt.attempt, status: { ...before, state: 'running', attempts: attempt.attempt, enqueuedAt: attempt.startedAt } };
}

/** The facts a folder's run has whatever its state: where it is, and what its options and trigger say. */
function common(folder: Location, runId: string, options: RunOptionsInput, trigger: RunTrigger | undefined) {
  const pipeline = triggerPipeline(trigger);
  return {
    runId,
    folder: formatLocation(folder),
    out: formatLocation(parentLocation(folder)),
    options,
    priority: runPriority(options),
    ...(trigger ? { trigger } : {}),
    ...(pipeline ? { pipeline } : {}),
  };
}

/** Newest first, by when the runs began (or were enqueued); runs of one instant by run id, so pages hold still. */
export function newestFirst(a: RunStatus, b: RunStatus): number {
  return Date.parse(b.enqueuedAt) - Date.parse(a.enqueuedAt) || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0);
}
