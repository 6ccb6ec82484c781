import { WaitingChildrenError, type Job, type Processor } from 'bullmq';
import { CAP_OPTIONS, checkOutput, checkRun, outDatabaseOf, parseRunOptions, type RunOptions } from '../config/index.js';
import { BatchScorerError, errorCode } from '../errors.js';
import type { Logger } from '../log.js';
import {
  errorRateExceeded,
  capLimit,
  capLimits,
  cappedPredictor,
  ExpiredError,
  expiredRun,
  type CapKind,
  finishRun,
  recordFailure,
  succeededManifestSchema,
  type Manifest,
  type ManifestParts,
  preflight,
  prepareRun,
  readPreparedRun,
  runFiles,
  type PreparedRun,
  sameRequest,
  withNeutralOptions,
  type RunRequest,
  checkRunFolder,
  readClaimedRequest,
  openAttempt,
  type OpenAttempt,
  requireRunFile,
  sumCounts,
  readSegmentsDone,
  unfinished,
} from '../scoring/index.js';
import { formatLocation, type Location } from '../storage/index.js';
import { ATTEMPTS, JOB_PRIORITY, WORKER_ID, runJobDataSchema, runPriority, segmentJobId, type RunJob, type RunJobData, type SegmentJobData } from './queues.js';
import { cancelledError } from './run-cancel.js';
import { RedisRunCaps } from './run-caps-store.js';
import { toQueueError } from './to-queue-error.js';
import type { WorkerContext } from './worker-context.js';

/**
 * A run job, in steps kept in its data so a retried or resumed job goes on from there: prepare
 * (describe snapshot, plan), then one child job per unfinished segment and wait for them, then
 * assemble the run folder.
 */
export function runJobProcessor(ctx: WorkerContext): Processor<RunJobData> {
  return async (job, token, lost) => {
    const data = await ctx.readJob(job, token, runJobDataSchema);
    const jobLog = ctx.log.child({ runId: data.runId, jobId: job.id });
    const asked = await allowedRequest(ctx, job, token, data, jobLog);
    const cancel = ctx.cancelWatch.follow(data.runId);
    const take = new RunJobTake(ctx, job, token, lost, data, jobLog, cancel.signal);
    try {
      return await take.steps(asked);
    } catch (err) {
      if (err instanceof WaitingChildrenError) throw err;
      if (lost?.aborted) throw ctx.lockLost(jobLog, lost);
      throw await take.failed(err);
    } finally {
      cancel.release();
    }
  };
}

/**
 * One take of a run job by this worker: the steps its data has not passed yet, and, should one
 * fail, the failure's record, which names what the take reached (the request it ran, the plan,
 * the attempt): hence an object holding them, filled in as the steps go.
 */
class RunJobTake {
  /** The job's signal: its run cancelled, its lock lost or the worker shutting down. */
  private readonly signal: AbortSignal;
  private readonly startedAt: string;
  private plannedAt: number | undefined;
  private request: RunRequest | undefined;
  private run: PreparedRun | undefined;
  private attempt: OpenAttempt | undefined;

  /** `cancelled` is aborted once the run's cancel is seen (see CancelWatch); `lost`, once the job's lock is. */
  constructor(
    private readonly ctx: WorkerContext,
    private readonly job: Job<RunJobData>,
    private readonly token: string | undefined,
    private readonly lost: AbortSignal | undefined,
    private readonly data: RunJob,
    private readonly jobLog: Logger,
    private readonly cancelled: AbortSignal,
  ) {
    this.signal = ctx.jobSignal(cancelled, lost);
    this.startedAt = data.startedAt ?? new Date().toISOString();
    this.plannedAt = data.plannedAt;
  }

  /** Runs the job's steps from the one its data says, `asked` the enqueuer's request (see allowedRequest). */
  async steps(asked: RunRequest) {
    const { ctx, data } = this;
    const { folder } = data;
    // A run cancelled before a worker took it never starts; one cancelled while its segments
    // were scored comes back here once they have stopped, and is not assembled.
    if (await ctx.cancels.has(data.runId)) throw cancelledError(data.runId);
    // Another's folder is refused before any of its files is read as this run's.
    await checkRunFolder(ctx.storage, folder, data.runId, this.signal);
    const request = await effectiveRequest(ctx, data, asked);
    this.request = request;
    const succeeded = await alreadySucceeded(ctx, request, data.runId, folder);
    if (succeeded) {
      await this.job.log(`already succeeded in ${formatLocation(folder)}; not run again`);
      // A new job for a run an earlier job finished (and metrics counted): counted once, not again.
      return { ...summary(succeeded, formatLocation(folder)), ...(data.step === undefined ? { repeat: true } : {}) };
    }
    const run = await this.prepare(request);
    if (data.step !== 'assemble') await this.score(run);
    return this.assemble(run);
  }

  /**
   * The run prepared (see prepareRun: on a later step, the plan an earlier take made), refused
   * while the run is past its error allowance or a cap. A first take is refused before describe is
   * asked where it cannot run (see preflight), and reopens the run's caps.
   */
  private async prepare(request: RunRequest): Promise<PreparedRun> {
    const { ctx, data, jobLog, signal, startedAt } = this;
    const { folder } = data;
    // Refused before describe is asked: a missing input or an output that cannot be written.
    if (data.step === undefined) {
      await preflight(request, ctx.storage, signal);
      // A run started anew (a resume) goes on under its own caps, counting what it sent before.
      await ctx.caps.reopen(data.runId);
    }
    // Planning's probe is a predict call like any other: taken from the run's caps.
    const caps = new RedisRunCaps(ctx.caps, data.runId, capLimits(request.options), jobLog);
    const client = cappedPredictor(ctx.clientFor(request.options), caps);
    // Heard when an attempt begins, not at each step or take of its job (see openAttempt).
    const onClaimed = async () => {
      const attempt = await openAttempt(ctx.storage, folder, startedAt, signal);
      this.attempt = attempt;
      if (attempt.opened) ctx.options.listener?.runStarted({ runId: data.runId, request, folder, startedAt, attempt: attempt.attempt });
    };
    const run = await prepareRun(request, data.runId, {
      storage: ctx.storage,
      client,
      log: jobLog,
      signal,
      onClaimed,
      ...(ctx.options.limits && { limits: ctx.options.limits }),
    });
    this.run = run;
    // Its segments stop once the run has been past its error allowance (see RunErrorAllowance), and
    // the run fails here, once the last one has: errors.jsonl and every count are then taken
    // while nothing writes any more. Likewise once it reached a cap: it ends expired.
    if (await ctx.progress.pastAllowance(run.runId)) throw errorRateExceeded(run);
    const expiredOn = await ctx.caps.expired(run.runId);
    if (expiredOn) throw new ExpiredError(expiredOn);
    return run;
  }

  /**
   * The scoring step: on a first take the run's progress starts (with the segments a resumed run
   * finished before) and the step moves on to `score`; a child job per unfinished segment, waited
   * for (WaitingChildrenError); then the step moves on to `assemble`.
   */
  private async score(run: PreparedRun): Promise<void> {
    const { ctx, data, job } = this;
    const done = await readSegmentsDone(ctx.storage, run);
    const todo = unfinished(run, done);
    if (data.step === undefined) {
      await ctx.progress.start(run.runId, run.input.rows, run.input.segments.length, sumCounts(done.filter((d) => d !== undefined)).rowsIn);
      // A resumed run starts with the segments it finished before.
      for (const [i, d] of done.entries()) if (d) await ctx.progress.segment(run.runId, i, d.rowsIn, d.rowsQuarantined, true);
      await job.log(
        `planned: ${run.input.rows} rows in ${run.input.segments.length} segments (${todo.length} to score), model ${run.model.project}/${run.model.name}.${run.model.resolvedVersion ?? '?'}`,
      );
      this.plannedAt = Date.now();
      // The data as it came, keys of other releases kept: only the step moves on.
      await job.updateData({ ...job.data, step: 'score', startedAt: this.startedAt, plannedAt: this.plannedAt });
    }
    if (todo.length > 0) {
      this.signal.throwIfAborted();
      await this.addSegmentJobs(run.runId, todo);
      if (await job.moveToWaitingChildren(this.token!)) throw new WaitingChildrenError();
    }
    await job.updateData({ ...job.data, step: 'assemble', startedAt: this.startedAt, plannedAt: this.plannedAt });
  }

  /** Adds the child jobs of the run's segments `todo`, each failing the run job should it fail. */
  private async addSegmentJobs(runId: string, todo: number[]): Promise<void> {
    const { job, data } = this;
    // Taken before the segments of runs of lower priority, even those waiting already.
    const priority = JOB_PRIORITY[runPriority(data.request.options)];
    await this.ctx.segmentsQueue.addBulk(
      todo.map((index) => ({
        name: 'segment',
        data: { runId, folder: formatLocation(data.folder), index, generation: job.timestamp } satisfies SegmentJobData,
        opts: {
          jobId: segmentJobId(runId, job.timestamp, index),
          parent: { id: job.id!, queue: job.queueQualifiedName },
          failParentOnFailure: true,
          priority,
          // Their retention is the workers' (see keptJobs).
          ...ATTEMPTS.segments,
        },
      })),
    );
  }

  /** The assembly step: the run folder's outputs and manifest, unless the run was cancelled first. */
  private async assemble(run: PreparedRun) {
    const { ctx, data, job, jobLog } = this;
    const { folder } = data;
    // The cancel handshake: the step says `assemble` before the marker is read here, and cancel()
    // writes the marker before it reads the step; so either this sees the cancel, or cancel()
    // sees the assembly and waits for its outcome. Once begun, assembly is not cut by a cancel:
    // a half-written `_SUCCESS` must never stand beside a run reported cancelled.
    if (await ctx.cancels.has(data.runId)) throw cancelledError(data.runId);
    const assembling = ctx.jobSignal(new AbortController().signal, this.lost);
    const queue = (segments: { jobId?: string; worker?: string }[]) => ({
      jobIds: [job.id!, ...segments.map((s) => s.jobId ?? '?')],
      attempts: job.attemptsMade + 1,
      workers: [...new Set([WORKER_ID, ...segments.map((s) => s.worker ?? '?')])].sort(),
    });
    const manifest = await finishRun(
      run,
      // A run resumed at its assembly (a release that kept no plannedAt) counts no scoring time.
      { startedAt: this.startedAt, plannedAt: this.plannedAt ?? Date.now(), queue, attempt: this.attempt?.attempt },
      { storage: ctx.storage, client: ctx.clientFor(run.request.options), log: jobLog, signal: assembling, findBaseline: ctx.findBaseline },
    );
    await job.log(`assembled: ${manifest.counts?.rowsScored} rows scored, ${manifest.counts?.rowsQuarantined} quarantined, in ${formatLocation(folder)}`);
    jobLog.info({ folder: formatLocation(folder) }, 'run succeeded');
    await ctx.runEnded(manifest, jobLog);
    return summary(manifest, formatLocation(folder));
  }

  /**
   * The error a take that failed with `err` throws, once the failure is recorded: a cancelled run
   * ends cancelled (see endCancelled); one stopped on a cap says which and how far it got; the
   * job fails (for good, or to be retried) and, failed for good, records the run's failure.
   */
  async failed(err: unknown): Promise<Error> {
    const { ctx, data, job, jobLog } = this;
    const { folder } = data;
    const endRequest = this.request ?? { ...data.request, options: { ...data.request.options } };
    // What a cancel causes may come before the watch's next poll (its segments removed under it).
    const cancelled = this.cancelled.aborted || errorCode(err) === 'E_CANCELLED' || (await ctx.cancels.has(data.runId).catch(() => false));
    const parts = { runId: data.runId, startedAt: this.startedAt, attempt: this.attempt?.attempt, run: this.run, request: endRequest };
    if (cancelled) return endCancelled(ctx, job, folder, parts, jobLog);
    // A run past its error allowance shows the rows of its errors.jsonl as quarantined, not what its stopped segments last reported.
    const keepQuarantined = (bySegment: readonly number[]) =>
      ctx.progress
        .keepQuarantined(data.runId, bySegment)
        .catch((e: unknown) => jobLog.warn({ err: e }, 'could not set the quarantined rows of the failed run'));
    // Stopped on a cap: the run's error says which, and how far it got.
    const failure =
      err instanceof ExpiredError && !err.cap
        ? await expiredQueuedRun(ctx, data.runId, this.run, endRequest, err.kind).catch((e: unknown) => {
            jobLog.warn({ err: e }, 'could not tell how far the expired run got: it ends expired without it');
            return err;
          })
        : err;
    return ctx.failJob(job, this.token, failure, jobLog, async (e) => {
      const manifest = await recordFailure(ctx.storage, folder, { ...parts, error: e }, jobLog, {
        onQuarantined: keepQuarantined,
        // A queued run's lifecycle began when it was enqueued: its end is told, attempt or not.
        begun: true,
      });
      if (manifest) await ctx.runEnded(manifest, jobLog);
    });
  }
}

/**
 * Ends a cancelled run: its segments no worker has taken are removed, its manifest says
 * `cancelled` (`_work` stays, for a resume), and its job fails for good with E_CANCELLED.
 */
async function endCancelled(ctx: WorkerContext, job: Job<RunJobData>, folder: Location, parts: ManifestParts, jobLog: Logger): Promise<Error> {
  const error = cancelledError(parts.runId);
  // Tidying: segments left waiting skip a cancelled run anyway, so a failure here must not replace the cancel.
  await job.removeUnprocessedChildren().catch((err: unknown) => jobLog.warn({ err }, 'could not remove the segments no worker took'));
  // Cancelled between two steps, the run was prepared by an earlier take of its job: recordFailure reads its plan.
  const manifest = await recordFailure(ctx.storage, folder, { ...parts, error }, jobLog, { begun: true });
  if (manifest) await ctx.runEnded(manifest, jobLog);
  await job.log('cancelled');
  jobLog.info('run cancelled');
  return toQueueError(error);
}

/** The error of a queued run stopped on `kind`, with how far it got: the calls and rows every worker sent, what its segments keep. */
async function expiredQueuedRun(
  ctx: WorkerContext,
  runId: string,
  run: PreparedRun | undefined,
  asked: { options: Parameters<typeof capLimit>[1] },
  kind: CapKind,
): Promise<ExpiredError> {
  return expiredRun(ctx.storage, runId, kind, run?.request.options ?? asked.options, await ctx.caps.usage(runId), run);
}

/**
 * The enqueuer's request (see askedRequest), once the deployment policy allows what it names, and
 * the pipeline it names (if any) makes it. Job data may come from any producer that can write to
 * Redis: it is checked here, before anything is read or sent (even the run folder's run.json). A refusal fails the job at once, leaving no run
 * folder, and tells no listener: a run the deployment does not allow is none of its runs, and no
 * webhook or lineage event names its id or folder.
 */
async function allowedRequest(ctx: WorkerContext, job: Job<RunJobData>, token: string | undefined, data: RunJob, jobLog: Logger): Promise<RunRequest> {
  const { policy = {} } = ctx.options;
  try {
    ctx.options.checkPipelineRun?.(data.runId, data.request);
    const asked = askedRequest(ctx, data);
    await checkRun(policy, { input: asked.input, out: asked.out, service: asked.options.service, outDatabase: outDatabaseOf(asked.input, asked.options) });
    await checkOutput(policy, data.folder);
    return asked;
  } catch (err) {
    throw await ctx.failJob(job, token, err, jobLog, async () => {});
  }
}

/** The enqueuer's request, its options over this worker's defaults. */
function askedRequest(ctx: WorkerContext, data: RunJob): RunRequest {
  return { ...data.request, options: parseRunOptions({ ...ctx.options.runDefaults, ...data.request.options }, `run ${data.runId} options`) };
}

/**
 * The request a worker runs: the enqueuer's (`asked`, see askedRequest). Once the run has
 * claimed its folder, its stored request stands (if the enqueuer's own options still match it), so
 * that a retry on a worker with other defaults goes on with the run as it began instead of refusing
 * it; output-neutral options the enqueuer set (a higher --max-error-rate for a resume) take effect,
 * and its caps, set or not (see CAP_OPTIONS).
 */
async function effectiveRequest(ctx: WorkerContext, data: RunJob, request: RunRequest): Promise<RunRequest> {
  const { folder } = data;
  const stored = (await readPreparedRun(ctx.storage, folder))?.request ?? (await readClaimedRequest(ctx.storage, folder));
  if (!stored) return request;
  const set = [...new Set([...Object.keys(data.request.options), ...CAP_OPTIONS])].filter((k) => k !== 'runId') as (keyof RunOptions)[];
  const asSet = { ...stored.options, ...Object.fromEntries(set.map((k) => [k, request.options[k]])) };
  return sameRequest(stored, { ...request, options: asSet }) ? withNeutralOptions(stored, asSet) : request;
}

/**
 * The manifest of a run that already succeeded: its job was retried after `_SUCCESS` was
 * written, or its id enqueued again after the job was removed. It is not run twice; the same id
 * asking for something else is refused. `folder` is the job's run folder, which `request` names
 * too (effectiveRequest keeps a stored request only when it asks for the same output).
 */
async function alreadySucceeded(ctx: WorkerContext, request: RunRequest, runId: string, folder: Location): Promise<Manifest | undefined> {
  if (!(await ctx.storage.exists(runFiles.success(folder)))) return undefined;
  const manifest = await requireRunFile(ctx.storage, runFiles.manifest(folder), succeededManifestSchema);
  const asked = { input: manifest.input.location, out: request.out, model: manifest.model.requested, options: manifest.options };
  if (!sameRequest(asked, request)) {
    throw new BatchScorerError(
      'E_RUN_EXISTS',
      `run ${runId} already succeeded in ${formatLocation(folder)} with another input, model or options; choose another run id`,
    );
  }
  return manifest;
}

/** What a run job answers BullMQ (its return value, shown by dashboards). */
function summary(manifest: Manifest, folder: string) {
  return { folder, state: manifest.state, counts: manifest.counts, outputs: manifest.outputs };
}
