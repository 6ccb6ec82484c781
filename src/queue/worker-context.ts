import { Backoffs, DelayedError, Job, Queue } from 'bullmq';
import type { RedisClient } from './queue-connection.js';
import pLimit from 'p-limit';
import type { z } from 'zod';
import type { RunOptions } from '../config/index.js';
import { AbortedError, errorCode, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import {
  type FindBaseline,
  loadPreparedRun,
  type Manifest,
  type OwnPredictor,
  type PreparedRun,
  ReadAhead,
  runResult,
  type ScoringObserver,
} from '../scoring/index.js';
import type { RequestSlots } from '../service/index.js';
import type { Location, Storage } from '../storage/index.js';
import { CancelWatch } from './cancel-watch.js';
import { failedAttemptLine } from './failed-attempt.js';
import { FleetBudgets } from './fleet-budget.js';
import { readJobData, RUNS_QUEUE, SEGMENTS_QUEUE, type QueueConfig, type RunJobData, type SegmentJobData } from './queues.js';
import { RunCancels } from './run-cancel.js';
import { RunProgressStore } from './run-progress.js';
import { RunCapsStore } from './run-caps-store.js';
import { SegmentIntake } from './segment-intake.js';
import { isFinalFailure, toQueueError } from './to-queue-error.js';
import type { WorkerOptions } from './worker-options.js';
import { pipelineBaseline } from './pipeline-baseline.js';
import { keepRunResult } from './run-results.js';
import { PipelineRuns } from './pipeline-runs.js';
import { KeySweeps } from './key-sweeps.js';
import { RunKeys } from './run-keys.js';

/** Runs a worker has seen recently; older ones are forgotten so a long-lived worker does not grow. */
const REMEMBERED_RUNS = 64;

/**
 * What a worker process shares between the jobs it runs: storage, service clients, the
 * process-wide request slots, the runs' fleet budgets, prepared runs, progress, cancellations, and the shutdown signal.
 */
export class WorkerContext {
  readonly progress: RunProgressStore;
  readonly cancels: RunCancels;
  /** The runs' caps (--max-requests, --max-rows, --deadline), shared by every worker. */
  readonly caps: RunCapsStore;
  /** Aborts the jobs this process holds of a run once it is cancelled. */
  readonly cancelWatch: CancelWatch;
  readonly runsQueue: Queue<RunJobData>;
  readonly segmentsQueue: Queue<SegmentJobData>;
  /** Aborted when a shutdown stops waiting for in-flight work. */
  readonly shutdown = new AbortController();
  /** The fleet-wide budgets of the runs this process scores. */
  private readonly budgets: FleetBudgets;
  /** Where a finishing run's drift is measured from (see pipelineBaseline). */
  readonly findBaseline: FindBaseline;
  /** When the segments worker takes its next segment (see SegmentIntake). */
  readonly segmentIntake: SegmentIntake;
  /** Deletes the keys of runs whose jobs are gone, after run jobs end (see KeySweeps). */
  readonly keySweeps: KeySweeps;
  private readonly processGate;
  private readonly runSlots = new Map<string, RequestSlots>();
  private readonly readAheads = new Map<string, ReadAhead>();
  private readonly clients = new Map<string, OwnPredictor>();
  private readonly runs = new Map<string, Promise<PreparedRun>>();

  constructor(
    readonly redis: RedisClient,
    readonly queue: QueueConfig,
    readonly storage: Storage,
    readonly log: Logger,
    readonly options: WorkerOptions,
    /** Hears the scoring of segments (the worker's metrics, with --metrics-port). */
    readonly observer?: ScoringObserver,
  ) {
    this.progress = new RunProgressStore(redis, queue.prefix);
    this.cancels = new RunCancels(redis, queue.prefix);
    this.caps = new RunCapsStore(redis, queue.prefix);
    this.cancelWatch = new CancelWatch(this.cancels, log);
    this.runsQueue = new Queue<RunJobData>(RUNS_QUEUE, { connection: redis, prefix: queue.prefix });
    this.segmentsQueue = new Queue<SegmentJobData>(SEGMENTS_QUEUE, { connection: redis, prefix: queue.prefix });
    this.processGate = pLimit(options.maxInFlight);
    this.budgets = new FleetBudgets(redis, queue.prefix, log);
    this.segmentIntake = new SegmentIntake(options.segments, log);
    this.findBaseline = pipelineBaseline(storage, new PipelineRuns(redis, queue.prefix));
    this.keySweeps = new KeySweeps(new RunKeys(redis, queue.prefix), log);
  }

  /** One client (keep-alive pool) per service, time limit and retry count. */
  clientFor(o: RunOptions): OwnPredictor {
    const key = JSON.stringify([o.service, o.timeout, o.retries]);
    let client = this.clients.get(key);
    if (!client) {
      client = this.options.predictors(o, this.options.maxInFlight, this.log);
      this.clients.set(key, client);
    }
    return client;
  }

  /**
   * A run's --concurrency, shared by every worker scoring it (FleetBudgets), inside this process's
   * own --max-in-flight slots: a request needs a slot of both. A run that sets none has this process's alone.
   * The process slot is taken first: a fleet slot, scarce, is never held by a request waiting
   * here, and a process asks Redis for at most its own --max-in-flight slots at once. Per run job
   * generation, as the prepared run is: a resumed run may have another --concurrency.
   */
  slotsFor(run: PreparedRun, generation: number): RequestSlots {
    return remember(this.runSlots, `${run.runId}.${generation}`, () => {
      const processSlots = this.options.maxInFlight;
      const asked = run.request.options.concurrency;
      if (asked === undefined) return { run: (fn) => this.processGate(fn), observe: () => {}, concurrency: processSlots };
      const fleet = this.budgets.budget(`${run.runId}.${generation}`, asked);
      return {
        run: (fn, signal) => this.processGate(() => fleet.run(fn, signal)),
        observe: (outcome, ms) => fleet.observe(outcome, ms),
        get concurrency() {
          return Math.min(fleet.concurrency, processSlots);
        },
      };
    });
  }

  /** The batches this process's segments of a run keep ahead of their writers, shared by them (see ReadAhead). */
  readAheadFor(run: PreparedRun, generation: number): ReadAhead {
    const slots = this.slotsFor(run, generation);
    return remember(this.readAheads, `${run.runId}.${generation}`, () => new ReadAhead(() => slots.concurrency, run.request.options.batchSize));
  }

  /** The prepared run (`_work/run.json`), read once per process and run job generation. */
  loadRun(folder: Location, runId: string, generation: number): Promise<PreparedRun> {
    const key = `${runId}.${generation}`;
    return remember(this.runs, key, () => {
      const run = loadPreparedRun(this.storage, folder);
      run.catch(() => this.runs.delete(key));
      return run;
    });
  }

  /**
   * A job's signal: the shutdown, its run's cancellation, and BullMQ's, aborted when the job's
   * lock is lost (another worker may have it now, or it vanished from Redis; see startWorker).
   */
  jobSignal(cancelled: AbortSignal, lost?: AbortSignal): AbortSignal {
    return AbortSignal.any([this.shutdown.signal, cancelled, ...(lost ? [lost] : [])]);
  }

  /** Sets a segment's progress and the run job's progress object; a failure to report is only logged. */
  async reportProgress(runId: string, index: number, rows: number, quarantined: number, done: boolean): Promise<void> {
    try {
      await this.progress.segment(runId, index, rows, quarantined, done);
      const p = await this.progress.read(runId);
      if (p) await this.progress.sample(runId, p);
      const job = p && (await Job.fromId(this.runsQueue, runId));
      if (job) await job.updateProgress({ ...p });
    } catch (err) {
      this.log.warn({ err, runId }, 'could not report progress');
    }
  }

  /**
   * The error a job whose lock was lost throws: the job is another worker's now, or gone with its
   * keys, so nothing of its outcome is recorded (no manifest, no progress, no failure reason);
   * BullMQ cannot move it either, and says so as a queue error.
   */
  lockLost(jobLog: Logger, lost: AbortSignal): Error {
    const why = lost.reason instanceof Error ? { err: lost.reason } : { reason: String(lost.reason) };
    jobLog.warn(why, 'lock lost: job stopped, its outcome left to whoever holds it now');
    return new AbortedError(String(lost.reason));
  }

  /**
   * The error a job throws: on shutdown the job is handed back (delayed to now, no attempt spent);
   * otherwise the error as BullMQ should treat it, after `onFinal` when no attempt is left. A run
   * job's failed attempt is recorded in its log first (see recordAttempt).
   */
  async failJob(job: Job, token: string | undefined, err: unknown, jobLog: Logger, onFinal: (e: Error) => Promise<unknown>): Promise<Error> {
    if (this.shutdown.signal.aborted && token) {
      await job.moveToDelayed(Date.now(), token);
      jobLog.info('handed back on shutdown');
      return new DelayedError();
    }
    const mapped = toQueueError(err);
    jobLog.error({ err, code: errorCode(err), attempt: job.attemptsMade + 1 }, 'job failed');
    const final = isFinalFailure(mapped, job.attemptsMade, job.opts.attempts);
    // An expired run is not a failed one: its status says how far it got.
    if (job.queueName === RUNS_QUEUE && errorCode(err) !== 'E_EXPIRED') await recordAttempt(job, err, mapped, final, jobLog);
    if (final) await onFinal(err as Error);
    return mapped;
  }

  /**
   * An attempt of a run ended, as its manifest records it: its result is kept beside its run job
   * (see keepRunResult) and its listeners are told. Keeping the result is best effort (a Redis
   * hiccup is logged): the manifest in the run folder is the record.
   */
  async runEnded(manifest: Manifest, jobLog: Logger): Promise<void> {
    await keepRunResult(this.runsQueue, this.redis, manifest.runId, runResult(manifest)).catch((err: unknown) =>
      jobLog.warn({ err }, "could not keep the run's result beside its job; its manifest holds it"),
    );
    this.options.listener?.runEnded(manifest);
  }

  /**
   * A job's data read through its queue's schema (see readJobData). Data that does not fit fails
   * the job at once, logged; no run is told: it may name none, or one it cannot be trusted with.
   */
  async readJob<T>(job: Job, token: string | undefined, schema: z.ZodType<T, unknown>): Promise<T> {
    try {
      return readJobData(schema, job);
    } catch (err) {
      throw await this.failJob(job, token, err, this.log.child({ jobId: job.id }), async () => {});
    }
  }

  /** Closes the queues, fleet budgets, key sweeps and service clients (the Redis connection is the caller's). */
  async close(): Promise<void> {
    this.cancelWatch.stop();
    await Promise.all([this.runsQueue.close(), this.segmentsQueue.close(), this.budgets.close(), this.keySweeps.close()]);
    await Promise.all([...this.clients.values()].map((c) => c.close()));
  }
}

/**
 * Writes a run job's failed attempt into its log (see failedAttemptLine), where those following
 * the run (`enqueue --wait`, `status --watch`) read it as it happens; when it is tried again is
 * worked out as BullMQ will, from the job's backoff. A failure to write is only logged.
 */
async function recordAttempt(job: Job, err: unknown, mapped: Error, final: boolean, jobLog: Logger): Promise<void> {
  try {
    const attemptsMade = job.attemptsMade + 1;
    const backoff = job.opts.backoff === undefined ? undefined : Backoffs.normalize(job.opts.backoff);
    // No backoff: tried again at once; -1: a strategy's word that it is not tried again.
    const delay = final ? -1 : ((backoff && (await Backoffs.calculate(backoff, attemptsMade, mapped, job))) ?? 0);
    const line = failedAttemptLine({
      attempt: attemptsMade,
      attempts: job.opts.attempts ?? 1,
      code: errorCode(err),
      reason: errorMessage(err),
      retryAt: delay === -1 ? null : new Date(Date.now() + delay).toISOString(),
    });
    await job.log(line);
  } catch (e) {
    jobLog.warn({ err: e }, 'could not record the failed attempt in the job log');
  }
}

function remember<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
    if (map.size > REMEMBERED_RUNS) map.delete(map.keys().next().value!);
  }
  return value;
}
