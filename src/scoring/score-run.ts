import { type Limits, processConcurrency } from '../config/index.js';
import pLimit from 'p-limit';
import { AbortedError, BatchScorerError, errorCode, isAbortError } from '../errors.js';
import type { Logger } from '../log.js';
import { createRequestSlots, maxConcurrency } from '../service/index.js';
import type { Location, Storage } from '../storage/index.js';
import { MemoryErrorAllowance, quarantineAllowance } from './error-allowance.js';
import { finishRun, recordFailure } from './finish-run.js';
import { FinishedSegments } from './finished-segments.js';
import type { Manifest } from './manifest.js';
import { preflight } from './preflight.js';
import type { PredictorFactory } from './predictor.js';
import { newRunId, startRun, type StartedRun } from './prepare-run.js';
import type { RunListener } from './run-listener.js';
import { openAttempt, type OpenAttempt } from './run-attempt.js';
import type { RunRequest } from './run-request.js';
import { runFiles, type PreparedRun } from './prepared-run.js';
import { planningGoesOn } from './plan.js';
import { computeProgress, PROGRESS_EVERY_MS, type RunProgress } from './progress.js';
import { ReadAhead } from './read-ahead.js';
import { capLimits, cappedPredictor, ExpiredError, expiredRun, MemoryRunCaps, readCapUsage, writeCapUsage } from './run-caps.js';
import { scoreSegment, type SegmentWork } from './score-segment.js';
import { readSegmentDone, readSegmentsDone } from './segment-done.js';

/** How far a run got: its folder claimed (a failure is recorded there), then its plan made (a resume goes on from it). */
export type RunStage = 'claimed' | 'planned';

export interface DirectRunContext {
  storage: Storage;
  log: Logger;
  /** Builds the run's predictor (see serviceClientFactory). */
  predictorFor: PredictorFactory;
  signal?: AbortSignal;
  /** Called as rows finish, at most a few times a second. */
  onProgress?: (progress: RunProgress) => void;
  /** Called as the run reaches each stage, so that a failure's report can say what the run left. */
  onStage?: (stage: RunStage) => void;
  /** Hears the run start (once its folder is claimed) and end (see RunListener). */
  listener?: RunListener;
  /** The deployment's bounds on sizes peers control (see LIMITS); DEFAULT_LIMITS when absent. */
  limits?: Limits;
}

/**
 * Scores a whole run in this process (`batch-scorer score`): the same plan, segments and
 * assembly as queue mode, with segments taken in turn instead of by workers. Finished
 * segments of a resumed run are kept. A request that cannot run (see `preflight`) is refused
 * before anything is asked or written.
 */
export async function scoreRun(request: RunRequest, ctx: DirectRunContext): Promise<Manifest> {
  const { storage } = ctx;
  // One failed segment stops the others: their requests are cancelled, not left to finish.
  const failFast = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, failFast.signal]) : failFast.signal;
  const runId = request.options.runId ?? newRunId();
  const log = ctx.log.child({ runId });
  const startedAt = new Date().toISOString();
  const folder = runFiles.folder(request.out, runId);
  // A request that cannot run is refused before the service is asked or anything is written.
  await preflight(request, storage, ctx.signal);

  // The caps count what the run's earlier attempts sent: every predict attempt goes through them.
  const caps = new MemoryRunCaps(capLimits(request.options), await readCapUsage(storage, folder, ctx.signal));
  const own = ctx.predictorFor(request.options, maxConcurrency(processConcurrency(request.options)), log);
  const client = cappedPredictor(own, caps);
  let run: PreparedRun | undefined;
  // Its attempt, once the run has claimed its folder: a request refused before has no lifecycle.
  let attempt: OpenAttempt | undefined;
  try {
    const onClaimed = async () => {
      ctx.onStage?.('claimed');
      attempt = await openAttempt(storage, folder, startedAt, signal);
      if (attempt.opened) ctx.listener?.runStarted({ runId, request, folder, startedAt, attempt: attempt.attempt });
    };
    const started = await startRun(request, runId, { storage, client, log, signal, onClaimed, ...(ctx.limits && { limits: ctx.limits }) });
    ctx.onStage?.('planned');
    const plannedAt = Date.now();
    run = started.run;
    // Past its allowance once its rows are all planned (see MemoryErrorAllowance.allow).
    const errorAllowance = new MemoryErrorAllowance(Infinity);
    const progress = progressReporter(started, errorAllowance, request.options.maxErrorRate, ctx.onProgress);
    const work = processWork(run, {
      storage,
      client,
      errorAllowance,
      caps,
      log,
      signal,
      stopSignal: ctx.signal,
      onRows: progress.onRows,
    });
    // Each segment's done marker is folded as it finishes, not all at the run's end (see FinishedSegments).
    const finished = new FinishedSegments(storage, run);
    await scoreSegments({ started, work, folder, caps, signal, failFast, progress, finished });
    signal.throwIfAborted();
    progress.report(true);
    const manifest = await finishRun(
      run,
      { startedAt, plannedAt, planEndAt: progress.tracker.planEndAt, finished, attempt: attempt?.attempt },
      { storage, client, log, signal },
    );
    log.info({ rows: manifest.counts?.rowsIn, quarantined: manifest.counts?.rowsQuarantined, folder: manifest.folder }, 'run succeeded');
    ctx.listener?.runEnded(manifest);
    return manifest;
  } catch (caught) {
    // Planning may still be reading the input (run.json could not be stored, say): it stops too.
    failFast.abort();
    throw await failedRun(caught, ctx, { runId, request, folder, startedAt, log, caps, run, attempt });
  } finally {
    await own.close();
  }
}

/** The work of a run's segments scored in this process: request slots of its --concurrency, and the read-ahead they share. */
export function processWork(run: PreparedRun, rest: Omit<SegmentWork, 'run' | 'slots' | 'readAhead'>): SegmentWork {
  const slots = createRequestSlots(processConcurrency(run.request.options));
  return { run, slots, readAhead: new ReadAhead(() => slots.concurrency, run.request.options.batchSize), ...rest };
}

/** A run's progress as this process counts it, and how it is told (see progressReporter). */
interface ProgressReporter {
  tracker: { rowsDone: number; segmentsDone: number; rowsSince: number; start: number; last: number; planEndAt: number };
  /** Tells the progress to `onProgress`, at most every PROGRESS_EVERY_MS unless forced. */
  report: (force?: boolean) => void;
  /** Counts rows finished (a segment's onRows). */
  onRows: (rows: number) => void;
}

/**
 * Counts a started run's progress from now. It is told once planning has ended, when the totals
 * are known; the run's error allowance then gets its allowance (`maxErrorRate` of the request asked) too.
 */
function progressReporter(
  started: StartedRun,
  errorAllowance: MemoryErrorAllowance,
  maxErrorRate: number,
  onProgress: DirectRunContext['onProgress'],
): ProgressReporter {
  const { run } = started;
  const tracker = { rowsDone: 0, segmentsDone: 0, rowsSince: 0, start: Date.now(), last: 0, planEndAt: 0 };
  const report = (force = false) => {
    const now = Date.now();
    // Totals are known once planning ended: no progress is told before.
    if (!onProgress || tracker.planEndAt === 0 || (!force && now - tracker.last < PROGRESS_EVERY_MS)) return;
    tracker.last = now;
    onProgress(
      computeProgress(
        {
          rowsDone: tracker.rowsDone,
          rowsTotal: run.input.rows,
          rowsQuarantined: errorAllowance.used,
          segmentsDone: tracker.segmentsDone,
          segmentsTotal: run.input.segments.length,
        },
        tracker.rowsSince,
        now - tracker.start,
      ),
    );
  };
  started.planned.then(
    () => {
      tracker.planEndAt = Date.now();
      errorAllowance.allow(quarantineAllowance(run.input.rows, maxErrorRate));
      report(true);
    },
    () => undefined, // Thrown by started.segments.
  );
  const onRows = (rows: number) => {
    tracker.rowsDone += rows;
    tracker.rowsSince += rows;
    report();
  };
  return { tracker, report, onRows };
}

/** What scoring a direct run's segments needs (see scoreSegments). */
interface DirectSegments {
  started: StartedRun;
  work: SegmentWork;
  folder: Location;
  caps: MemoryRunCaps;
  /** The run's signal: the caller's, and aborted by `failFast`. */
  signal: AbortSignal;
  failFast: AbortController;
  progress: ProgressReporter;
  finished: FinishedSegments;
}

/**
 * Scores a run's segments as planning finds them, `segmentsAtOnce` at a time; a resumed run's
 * finished ones are counted, not scored again. The first segment to fail stops the others, and
 * its error is thrown once they have all settled.
 */
async function scoreSegments({ started, work, folder, caps, signal, failFast, progress, finished }: DirectSegments): Promise<void> {
  const { run, storage, errorAllowance } = work;
  const { tracker, report } = progress;
  // More than one segment at once keeps the pipe full across a segment's end.
  const segments = pLimit(run.request.options.segmentsAtOnce);
  // A resumed run keeps its finished segments, and counts them as done: read in windows from a
  // whole plan, one by one as a plan made again finds them.
  const replanning = started.resumed && planningGoesOn(run.input);
  const before = started.resumed && !replanning ? await readSegmentsDone(storage, run) : [];
  const doneBefore = (index: number) => (replanning ? readSegmentDone(storage, folder, index) : before[index]);
  const scoring: Promise<void>[] = [];
  // The first segment to fail is the run's failure; those stopped by it fail after it.
  let failed: { err: unknown } | undefined;
  try {
    for await (const index of started.segments) {
      const done = await doneBefore(index);
      if (done) {
        tracker.rowsDone += done.rowsIn;
        tracker.segmentsDone++;
        errorAllowance.report(index, done.rowsQuarantined);
        finished.add(index, done);
        continue;
      }
      const segment = segments(async () => {
        signal.throwIfAborted();
        // Past a cap, the run sends nothing more: segments not begun are left to a resume.
        if (caps.expired) return;
        let done;
        try {
          done = await scoreSegment(work, index);
        } catch (err) {
          // Stopped on a cap, a segment does not stop its siblings: their batches in flight finish.
          if (err instanceof ExpiredError) return;
          throw err;
        }
        finished.add(index, done);
        tracker.segmentsDone++;
        report();
      });
      segment.catch((err: unknown) => {
        failed ??= { err };
        failFast.abort();
      });
      scoring.push(segment);
    }
    await Promise.all(scoring);
    await started.planned;
    if (caps.expired) throw new ExpiredError(caps.expired);
  } catch (err) {
    const cause = failed?.err ?? err;
    failFast.abort();
    await Promise.allSettled(scoring);
    throw cause;
  }
}

/** Where a direct run was when it failed (see failedRun). */
interface FailedRun {
  runId: string;
  request: RunRequest;
  folder: Location;
  startedAt: string;
  log: Logger;
  caps: MemoryRunCaps;
  /** Its plan, once made. */
  run: PreparedRun | undefined;
  /** Its attempt, once it claimed its folder. */
  attempt: OpenAttempt | undefined;
}

/**
 * Records a direct run's failure (its manifest; what it sent, for its resumes' caps) and tells its
 * listener; answers the error the run then throws, coded like any failure.
 */
async function failedRun(caught: unknown, ctx: DirectRunContext, { runId, request, folder, startedAt, log, caps, run, attempt }: FailedRun): Promise<unknown> {
  const { storage } = ctx;
  // A caller's plain AbortSignal rejects with a DOMException; the run reports it with a code like any failure.
  let err = isAbortError(caught) && !(caught instanceof BatchScorerError) ? new AbortedError(`run ${runId} cancelled`, caught) : caught;
  // Stopped on a cap (planning's probe may meet it too): the run's error says which, and how far it got.
  if (caught instanceof ExpiredError && !caught.cap) {
    err = await expiredRun(storage, runId, caught.kind, request.options, caps.usage, run).catch((e: unknown) => {
      log.warn({ err: e }, 'could not tell how far the expired run got: it ends expired without it');
      return caught;
    });
  }
  const manifest = await recordFailure(storage, folder, { runId, startedAt, attempt: attempt?.attempt, run, request, error: err as Error }, log, {
    begun: attempt !== undefined,
  });
  // What this attempt sent counts against the caps of the run's resumes, once it has a plan to
  // resume from: a run that failed before its plan (its probe's calls) starts afresh, and a held
  // run is not resumed (its _work is gone).
  if (run && manifest?.state !== 'held')
    await writeCapUsage(storage, folder, caps.usage).catch((e: unknown) => log.warn({ err: e }, 'could not record what the run sent'));
  if (manifest) ctx.listener?.runEnded(manifest);
  // The manifest's message counts what errors.jsonl holds (see recordFailure).
  return manifest?.error && errorCode(err) === 'E_ERROR_RATE' ? new BatchScorerError('E_ERROR_RATE', manifest.error.message, { cause: err }) : err;
}
