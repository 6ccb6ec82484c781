import { Job, type Processor } from 'bullmq';
import { recordFailure } from '../pipeline/finish-run.js';
import type { PreparedRun } from '../pipeline/prepared-run.js';
import { PROGRESS_EVERY_MS } from '../pipeline/progress.js';
import { quarantineAllowance, scoreSegment } from '../pipeline/score-segment.js';
import { readSegmentDone } from '../pipeline/segment-done.js';
import { parseLocation } from '../storage/location.js';
import { WORKER_ID, type SegmentJobData } from './queues.js';
import { toQueueError } from './to-queue-error.js';
import type { WorkerContext } from './worker-context.js';

/** A segment job: scores one segment of a prepared run into storage, with the pipeline's scoreSegment. */
export function segmentJobProcessor(ctx: WorkerContext): Processor<SegmentJobData> {
  return async (job, token, lost) => {
    const { runId, index, generation } = job.data;
    const folder = parseLocation(job.data.folder);
    const jobLog = ctx.log.child({ runId, segment: index, jobId: job.id });
    // A segment finished before a crash, or by another worker, is never scored again; its counts
    // are reported again, in case the crash came between its done marker and its progress.
    const done = await readSegmentDone(ctx.storage, folder, index);
    if (done) {
      await ctx.reportProgress(runId, index, done.rowsIn, done.rowsQuarantined, true);
      return { skipped: true };
    }
    // Segments of a cancelled run are not scored; siblings of a segment that failed its run would be scored for nothing.
    if (await ctx.cancels.has(runId)) return { skipped: 'run cancelled' };
    if ((await (await Job.fromId(ctx.runsQueue, runId))?.getState()) === 'failed') return { skipped: 'run failed' };
    const cancel = ctx.cancelWatch.follow(runId);
    let run: PreparedRun | undefined;
    try {
      run = await ctx.loadRun(folder, runId, generation);
      let rows = 0;
      let last = 0;
      let reporting: Promise<void> | undefined;
      const budget = { allowed: quarantineAllowance(run.input.rows, run.request.options.maxErrorRate), used: 0 };
      const stop = ctx.jobSignal(cancel.signal, lost);
      const counts = await scoreSegment(
        {
          run,
          storage: ctx.storage,
          client: ctx.clientFor(run.request.options),
          limit: ctx.limitFor(run, generation),
          readAhead: ctx.readAheadFor(run, generation),
          budget,
          log: jobLog,
          // In a job, stopping and failing are the same signal: no sibling shares it.
          signal: stop,
          stopSignal: stop,
          facts: { worker: WORKER_ID, jobId: job.id!, attempt: job.attemptsMade + 1 },
          observer: ctx.observer,
          onRows: (n) => {
            rows += n;
            const now = Date.now();
            // One report at a time: while Redis is away they would otherwise pile up without bound.
            if (now - last < PROGRESS_EVERY_MS || reporting) return;
            last = now;
            reporting = ctx.reportProgress(runId, index, rows, budget.used, false).finally(() => (reporting = undefined));
          },
        },
        index,
      );
      await reporting;
      await ctx.reportProgress(runId, index, counts.rowsIn, counts.rowsQuarantined, true);
      await Job.addJobLog(
        ctx.runsQueue,
        runId,
        `segment ${index} done: ${counts.rowsScored} scored, ${counts.rowsQuarantined} quarantined (${WORKER_ID}, attempt ${job.attemptsMade + 1})`,
      );
      return { rows: counts.rowsIn };
    } catch (err) {
      if (lost?.aborted) throw ctx.lockLost(jobLog, lost);
      // A cancelled run's segments stop without failing it: once none is left, its run job is
      // taken again and ends the run as cancelled.
      if (cancel.signal.aborted) {
        jobLog.info('stopped: run cancelled');
        return { skipped: 'run cancelled' };
      }
      throw await ctx.failJob(job, token, err, jobLog, async (e) => {
        // BullMQ fails the run with "child ... failed"; the segment's own reason goes where status finds it.
        const reason = `segment ${index}: ${toQueueError(e).message}`;
        await ctx.progress.fail(runId, reason);
        await Job.addJobLog(ctx.runsQueue, runId, `failed: ${reason}`);
        await recordFailure(ctx.storage, folder, { runId, startedAt: run?.createdAt ?? new Date().toISOString(), run, error: e }, jobLog);
      });
    } finally {
      cancel.release();
    }
  };
}
