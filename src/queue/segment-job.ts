import { Job, type Processor } from 'bullmq';
import { checkOutput, checkRun, outDatabaseOf, type DeploymentPolicy } from '../config/index.js';
import { errorCode } from '../errors.js';
import type { Logger } from '../log.js';
import {
  recordFailure,
  type PreparedRun,
  PROGRESS_EVERY_MS,
  quarantineAllowance,
  capLimits,
  cappedPredictor,
  scoreSegment,
  readSegmentDone,
} from '../scoring/index.js';
import { segmentJobDataSchema, WORKER_ID, type SegmentJobData } from './queues.js';
import { RunErrorAllowance } from './run-error-allowance.js';
import { RedisRunCaps } from './run-caps-store.js';
import { toQueueError } from './to-queue-error.js';
import type { WorkerContext } from './worker-context.js';

/** The states of a run job whose segments are being scored: waiting for them, or (for a moment) still adding them. */
const RUN_UNDER_WAY: readonly string[] = ['waiting-children', 'active'];

/** A segment job: scores one segment of a prepared run into storage, with the scoring core's scoreSegment. */
export function segmentJobProcessor(ctx: WorkerContext): Processor<SegmentJobData> {
  return async (job, token, lost) => {
    const data = await ctx.readJob(job, token, segmentJobDataSchema);
    const take = new SegmentJobTake(ctx, job, token, lost, data);
    await take.checkFolder();
    const skipped = await take.skipped();
    if (skipped) return skipped;
    const cancel = ctx.cancelWatch.follow(data.runId);
    try {
      return await take.score(cancel.signal);
    } catch (err) {
      if (lost?.aborted) throw ctx.lockLost(take.jobLog, lost);
      return await take.stopped(err, cancel.signal);
    } finally {
      cancel.release();
    }
  };
}

/** A segment job's data as read (see readJob): its folder a location. */
type SegmentJob = ReturnType<typeof segmentJobDataSchema.parse>;

/**
 * One take of a segment job by this worker: its checks, the scoring and, should it stop, what it
 * answers. The rows it scored and the progress report under way are read once it has stopped,
 * hence an object holding them.
 */
class SegmentJobTake {
  readonly jobLog: Logger;
  private readonly policy: DeploymentPolicy;
  private run: PreparedRun | undefined;
  /** Rows finished so far (scored or quarantined), as scoreSegment tells them. */
  private rows = 0;
  /** The progress report under way: one at a time. */
  private reporting: Promise<void> | undefined;
  private allowance: RunErrorAllowance | undefined;

  constructor(
    private readonly ctx: WorkerContext,
    private readonly job: Job<SegmentJobData>,
    private readonly token: string | undefined,
    private readonly lost: AbortSignal | undefined,
    private readonly data: SegmentJob,
  ) {
    this.jobLog = ctx.log.child({ runId: data.runId, segment: data.index, jobId: job.id });
    this.policy = ctx.options.policy ?? {};
  }

  /**
   * Segment job data may come from any producer that can write to Redis: its folder is checked
   * before anything in it is read; the run it holds, once read (its input and service, see
   * `score`). A folder the policy refuses is no run's of this deployment: the job fails, and no
   * run is told of it.
   */
  async checkFolder(): Promise<void> {
    try {
      await checkOutput(this.policy, this.data.folder);
    } catch (err) {
      throw await this.ctx.failJob(this.job, this.token, err, this.jobLog, async () => {});
    }
  }

  /** Why the segment is not scored, if it is not: done already, or its run cancelled, failed or expired. */
  async skipped() {
    const { ctx, jobLog } = this;
    const { runId, folder, index } = this.data;
    // A segment finished before a crash, or by another worker, is never scored again; its counts
    // are reported again, in case the crash came between its done marker and its progress.
    const done = await readSegmentDone(ctx.storage, folder, index);
    if (done) {
      await ctx.reportProgress(runId, index, done.rowsIn, done.rowsQuarantined, true);
      return { skipped: true };
    }
    // Segments of a cancelled run are not scored; siblings of a segment that failed its run, or
    // took it past its error allowance, would be scored for nothing.
    if (await ctx.cancels.has(runId)) {
      // Logged as the cancel watch logs a job it stops: whether a segment of the run was running
      // when the cancel came or only started after it, the worker's log says it stopped for it.
      jobLog.info('run cancelled: stopping its jobs');
      return { skipped: 'run cancelled' };
    }
    if ((await ctx.progress.pastAllowance(runId)) || (await (await Job.fromId(ctx.runsQueue, runId))?.getState()) === 'failed') {
      return { skipped: 'run failed' };
    }
    // Nor those of a run that reached a cap: it sends nothing more. Logged as a segment stopped
    // by the cap logs it, so a worker's log says it stopped for the cap whichever it met.
    if (await ctx.caps.expired(runId)) {
      jobLog.info({ rows: 0 }, 'stopped: the run reached a cap');
      return { skipped: 'run expired' };
    }
    return undefined;
  }

  /** Scores the segment, its progress reported as it goes and once done; `cancelled` aborts once its run's cancel is seen. */
  async score(cancelled: AbortSignal) {
    const { ctx, job, jobLog } = this;
    const { runId, folder, index, generation } = this.data;
    const run = await ctx.loadRun(folder, runId, generation);
    this.run = run;
    const { input, out, options } = run.request;
    await checkRun(this.policy, { input, out, service: options.service, outDatabase: outDatabaseOf(input, options) });
    let last = 0;
    const runAllowance = new RunErrorAllowance(ctx.progress, runId, quarantineAllowance(run.input.rows, run.request.options.maxErrorRate), jobLog);
    this.allowance = runAllowance;
    const caps = new RedisRunCaps(ctx.caps, runId, capLimits(run.request.options), jobLog);
    const stop = ctx.jobSignal(cancelled, this.lost);
    const counts = await scoreSegment(
      {
        run,
        storage: ctx.storage,
        client: cappedPredictor(ctx.clientFor(run.request.options), caps),
        slots: ctx.slotsFor(run, generation),
        readAhead: ctx.readAheadFor(run, generation),
        errorAllowance: runAllowance,
        caps,
        log: jobLog,
        // In a job, stopping and failing are the same signal: no sibling shares it.
        signal: stop,
        stopSignal: stop,
        facts: { worker: WORKER_ID, jobId: job.id!, attempt: job.attemptsMade + 1 },
        observer: ctx.observer,
        onSent: () => ctx.segmentIntake.sent(job.id!),
        onRows: (n) => {
          this.rows += n;
          const now = Date.now();
          // One report at a time: while Redis is away they would otherwise pile up without bound.
          if (now - last < PROGRESS_EVERY_MS || this.reporting) return;
          last = now;
          this.reporting = ctx.reportProgress(runId, index, this.rows, runAllowance.quarantined, false).finally(() => (this.reporting = undefined));
        },
      },
      index,
    );
    await this.reporting;
    await ctx.reportProgress(runId, index, counts.rowsIn, counts.rowsQuarantined, true);
    await Job.addJobLog(
      ctx.runsQueue,
      runId,
      `segment ${index} done: ${counts.rowsScored} scored, ${counts.rowsQuarantined} quarantined (${WORKER_ID}, attempt ${job.attemptsMade + 1})`,
    );
    return { rows: counts.rowsIn };
  }

  /**
   * What the job answers once scoring stopped on `err`: a segment of a run cancelled, past its
   * error allowance or a cap stops without failing; any other failure fails the job (see failJob).
   */
  async stopped(err: unknown, cancelled: AbortSignal) {
    const { ctx, jobLog, allowance } = this;
    const { runId, index } = this.data;
    // A cancelled run's segments stop without failing it: once none is left, its run job is
    // taken again and ends the run as cancelled.
    if (cancelled.aborted) {
      jobLog.info('stopped: run cancelled');
      return { skipped: 'run cancelled' };
    }
    // Past the run's error allowance, the segment stops without failing: a failed segment would
    // fail the run at once (failParentOnFailure) while its siblings still write their rows. The
    // segments no worker took go; once the last one has stopped, the run job fails the run.
    if (allowance && errorCode(err) === 'E_ERROR_RATE') {
      await this.reporting;
      await ctx.reportProgress(runId, index, this.rows, allowance.quarantined, false);
      await (await Job.fromId(ctx.runsQueue, runId))?.removeUnprocessedChildren();
      jobLog.info({ rows: this.rows, quarantined: allowance.quarantined }, 'stopped: the run is past its error allowance');
      return { skipped: 'run failed' };
    }
    // Stopped on a cap, the segment stops without failing, as past the error allowance: its batches
    // in flight were answered; the segments no worker took go, and the run job ends the run expired.
    if (errorCode(err) === 'E_EXPIRED') {
      await (await Job.fromId(ctx.runsQueue, runId))?.removeUnprocessedChildren();
      jobLog.info({ rows: this.rows }, 'stopped: the run reached a cap');
      return { skipped: 'run expired' };
    }
    throw await ctx.failJob(this.job, this.token, err, jobLog, (e) => this.failRun(e));
  }

  /** The segment failed for good: its run, if under way, fails with its reason (see failJob's onFinal). */
  private async failRun(e: Error): Promise<void> {
    const { ctx, jobLog, run } = this;
    const { runId, folder, index } = this.data;
    // Only a run under way is failed by its segment: a segment job whose run job is gone (removed,
    // or never there) or has ended (job data any producer wrote, naming a finished run) has no
    // run to report to, and a succeeded run is never told as failed.
    const runJob = await Job.fromId(ctx.runsQueue, runId);
    if (!runJob || !RUN_UNDER_WAY.includes(await runJob.getState())) return;
    // BullMQ fails the run with "child ... failed"; the segment's own reason goes where status finds it.
    const reason = `segment ${index}: ${toQueueError(e).message}`;
    const first = await ctx.progress.fail(runId, reason);
    await Job.addJobLog(ctx.runsQueue, runId, `failed: ${reason}`);
    const manifest = await recordFailure(ctx.storage, folder, { runId, startedAt: run?.createdAt ?? new Date().toISOString(), run, error: e }, jobLog, {
      begun: true,
    });
    // BullMQ fails the run job without taking it again: its end is heard here, from the first segment that failed it.
    if (first && manifest) await ctx.runEnded(manifest, jobLog);
  }
}
