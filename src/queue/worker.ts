import { DelayedError, Job, Queue, WaitingChildrenError, Worker, type Processor } from 'bullmq';
import pLimit from 'p-limit';
import { parseRunOptions, resolveConcurrency, type RunOptions, type RunOptionsInput } from '../config/run-options.js';
import { AbortedError, BatchScorerError, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { finishRun, recordFailure } from '../pipeline/finish-run.js';
import type { Manifest } from '../pipeline/manifest.js';
import { prepareRun, sameRequest, type RunRequest } from '../pipeline/prepare-run.js';
import { runFiles, type PreparedRun } from '../pipeline/prepared-run.js';
import type { Limiter } from '../pipeline/score-batch.js';
import type { SegmentCounts } from '../pipeline/segment-counts.js';
import { quarantineAllowance, scoreSegment } from '../pipeline/score-segment.js';
import { ServiceClient } from '../service/client.js';
import { DEFAULT_RETRY_POLICY } from '../service/retry-policy.js';
import { formatLocation, parseLocation } from '../storage/location.js';
import type { Storage } from '../storage/storage.js';
import {
  ATTEMPTS,
  RETENTION,
  RUNS_QUEUE,
  SEGMENTS_QUEUE,
  WORKER_ID,
  redisConnection,
  segmentJobId,
  type QueueConfig,
  type RunJobData,
  type SegmentJobData,
} from './queues.js';
import { RunProgressStore } from './run-progress.js';
import { isFinalFailure, toQueueError } from './to-queue-error.js';

/** Options of one worker process. */
export interface WorkerOptions {
  /** Predict requests in flight at most in this process, over all the segments it works on. */
  concurrency: number;
  /** Segments this process scores at once. */
  segments: number;
  /** How long SIGTERM waits for in-flight segments before handing them back, in ms. */
  shutdownTimeoutMs: number;
  /** BullMQ lock duration in ms: a killed worker's segments go back to the queue after about this long. */
  lockDurationMs: number;
  /** MODEL_SERVICE_TOKEN; never logged. */
  token?: string;
  /** Run options a job does not set (this worker's MODEL_SERVICE_URL and config files). */
  runDefaults?: RunOptionsInput;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { concurrency: 4, segments: 2, shutdownTimeoutMs: 30_000, lockDurationMs: 30_000 };

const PROGRESS_EVERY_MS = 250;

/** A running worker; `close()` is the graceful shutdown and is safe to call twice. */
export interface ScoringWorker {
  /** Stops taking work, lets in-flight segments finish for up to shutdownTimeoutMs, then hands them back. */
  close(): Promise<void>;
}

/**
 * Starts a worker process's two BullMQ workers: runs (plan, then assemble once every segment is
 * done) and segments (score one segment into storage). Any number of processes on any machines
 * share the work through Redis.
 */
export function startWorker(queue: QueueConfig, storage: Storage, log: Logger, options: WorkerOptions): ScoringWorker {
  const redis = redisConnection(queue.redisUrl, 'worker');
  const progress = new RunProgressStore(redis, queue.prefix);
  const segmentsQueue = new Queue<SegmentJobData>(SEGMENTS_QUEUE, { connection: redis, prefix: queue.prefix });
  const runsQueue = new Queue<RunJobData>(RUNS_QUEUE, { connection: redis, prefix: queue.prefix });
  const processLimit = pLimit(options.concurrency);
  const runLimits = new Map<string, Limiter>();
  const clients = new Map<string, ServiceClient>();
  const runs = new Map<string, Promise<PreparedRun>>();
  const shutdown = new AbortController();

  const clientFor = (o: PreparedRun['request']['options']): ServiceClient => {
    const key = JSON.stringify([o.service, o.timeout, o.retries]);
    let client = clients.get(key);
    if (!client) {
      client = new ServiceClient({ baseUrl: o.service, token: options.token, timeoutMs: o.timeout, retry: { ...DEFAULT_RETRY_POLICY, retries: o.retries }, connections: options.concurrency, logger: log });
      clients.set(key, client);
    }
    return client;
  };
  // A run's own --concurrency holds inside this process's limit: a request needs a slot of both.
  const limitFor = (run: PreparedRun): Limiter =>
    remember(runLimits, run.runId, () => {
      const own = pLimit(resolveConcurrency(run.request.options.concurrency));
      return (fn) => own(() => processLimit(fn));
    });
  const loadRun = (folder: string, runId: string): Promise<PreparedRun> =>
    remember(runs, runId, () => {
      const run = storage.readText(runFiles.prepared(parseLocation(folder))).then((t) => JSON.parse(t) as PreparedRun);
      run.catch(() => runs.delete(runId));
      return run;
    });

  // BullMQ aborts a job's signal when the worker loses the job's lock: another worker may have it now.
  const jobSignal = (lost?: AbortSignal) => (lost ? AbortSignal.any([shutdown.signal, lost]) : shutdown.signal);

  const processRun: Processor<RunJobData> = async (job, token, lost) => {
    const signal = jobSignal(lost);
    const data = job.data;
    const jobLog = log.child({ runId: data.runId, jobId: job.id });
    const startedAt = data.startedAt ?? new Date().toISOString();
    const folder = runFiles.folder(data.request.out, data.runId);
    let request: RunRequest | undefined;
    let run: PreparedRun | undefined;
    try {
      // Already succeeded: this job was retried after `_SUCCESS` was written, or the same run id was
      // enqueued again after its job was removed. The run is done; it is not run twice.
      request = { ...data.request, options: parseRunOptions({ ...options.runDefaults, ...data.request.options }, `run ${data.runId} options`) };
      if (await storage.exists(runFiles.success(folder))) {
        const manifest = JSON.parse(await storage.readText(runFiles.manifest(folder))) as Manifest;
        const asked = { input: manifest.input.location, out: data.request.out, model: manifest.model.requested, options: manifest.options as RunOptions };
        if (!sameRequest(asked, request)) {
          throw new BatchScorerError('E_RUN_EXISTS', `run ${data.runId} already succeeded in ${formatLocation(folder)} with another input, model or options; choose another run id`, { exitCode: 2 });
        }
        await job.log(`already succeeded in ${formatLocation(folder)}; not run again`);
        return { folder: formatLocation(folder), state: manifest.state, counts: manifest.counts, outputs: manifest.outputs };
      }
      run = await prepareRun(request, data.runId, { storage, client: clientFor(request.options), log: jobLog, signal });
      if (data.step === undefined) {
        await progress.start(run.runId, run.input.rows, run.input.segments.length);
        await job.log(`planned: ${run.input.rows} rows in ${run.input.segments.length} segments, model ${run.model.project}/${run.model.name}.${run.model.resolvedVersion ?? '?'}`);
        await job.updateData({ ...data, step: 'score', startedAt });
      }
      if (data.step !== 'assemble') {
        const todo = [];
        for (const s of run.input.segments) if (!(await storage.exists(runFiles.segmentDone(folder, s.index)))) todo.push(s.index);
        if (todo.length > 0) {
          await segmentsQueue.addBulk(
            todo.map((index) => ({
              name: 'segment',
              data: { runId: run!.runId, folder: run!.folder, index },
              opts: { jobId: segmentJobId(run!.runId, index), parent: { id: job.id!, queue: job.queueQualifiedName }, failParentOnFailure: true, ...ATTEMPTS.segments, ...RETENTION.segments },
            })),
          );
          if (await job.moveToWaitingChildren(token!)) throw new WaitingChildrenError();
        }
        await job.updateData({ ...data, step: 'assemble', startedAt });
      }
      const manifest = await finishRun(storage, run, {
        startedAt,
        queue: (segments) => ({
          jobIds: [job.id!, ...segments.map((s) => s.jobId ?? '?')],
          attempts: job.attemptsMade + 1,
          workers: [...new Set([WORKER_ID, ...segments.map((s) => s.worker ?? '?')])].sort(),
        }),
      }, jobLog, signal);
      await job.log(`assembled: ${manifest.counts?.rowsScored} rows scored, ${manifest.counts?.rowsQuarantined} quarantined, in ${run.folder}`);
      jobLog.info({ folder: run.folder }, 'run succeeded');
      return { folder: run.folder, state: manifest.state, counts: manifest.counts, outputs: manifest.outputs };
    } catch (err) {
      if (err instanceof WaitingChildrenError) throw err;
      throw await handBackOrFail(job, token, err, formatLocation(folder), jobLog, (e) =>
        recordFailure(storage, folder, { runId: data.runId, startedAt, run, request: request ?? { ...data.request, options: { ...data.request.options } }, error: e }, jobLog),
      );
    }
  };

  const processSegment: Processor<SegmentJobData> = async (job, token, lost) => {
    const { runId, folder, index } = job.data;
    const jobLog = log.child({ runId, segment: index, jobId: job.id });
    const done = runFiles.segmentDone(parseLocation(folder), index);
    // A segment finished before a crash, or by another worker, is never scored again; its counts
    // are reported again, in case the crash came between its done marker and its progress.
    if (await storage.exists(done)) {
      const counts = JSON.parse(await storage.readText(done)) as SegmentCounts;
      await reportProgress(runId, index, counts.rowsIn, counts.rowsQuarantined, true);
      return { skipped: true };
    }
    // Siblings of a segment that failed its run would be scored for nothing.
    if ((await (await Job.fromId(runsQueue, runId))?.getState()) === 'failed') return { skipped: 'run failed' };
    let run: PreparedRun | undefined;
    try {
      run = await loadRun(folder, runId);
      let rows = 0;
      let last = 0;
      let reporting: Promise<void> | undefined;
      const work = {
        run,
        storage,
        client: clientFor(run.request.options),
        limit: limitFor(run),
        window: resolveConcurrency(run.request.options.concurrency) + 1,
        budget: { allowed: quarantineAllowance(run.input.rows, run.request.options.maxErrorRate), used: 0 },
        log: jobLog,
        signal: jobSignal(lost),
        facts: { worker: WORKER_ID, jobId: job.id!, attempt: job.attemptsMade + 1 },
        onRows: (n: number) => {
          rows += n;
          const now = Date.now();
          // One report at a time: while Redis is away they would otherwise pile up without bound.
          if (now - last < PROGRESS_EVERY_MS || reporting) return;
          last = now;
          reporting = reportProgress(runId, index, rows, work.budget.used, false).finally(() => (reporting = undefined));
        },
      };
      const counts = await scoreSegment(work, index);
      await reporting;
      await reportProgress(runId, index, counts.rowsIn, counts.rowsQuarantined, true);
      await Job.addJobLog(runsQueue, runId, `segment ${index} done: ${counts.rowsScored} scored, ${counts.rowsQuarantined} quarantined (${WORKER_ID}, attempt ${job.attemptsMade + 1})`);
      return { rows: counts.rowsIn };
    } catch (err) {
      throw await handBackOrFail(job, token, err, folder, jobLog, async (e) => {
        const reason = `segment ${index}: ${toQueueError(e).message}`;
        await progress.fail(runId, reason);
        await Job.addJobLog(runsQueue, runId, `failed: ${reason}`);
        await recordFailure(storage, parseLocation(folder), { runId, startedAt: run?.createdAt ?? new Date().toISOString(), run, error: e }, jobLog);
      });
    }
  };

  /** Progress on the run's job, summed over segments, at most a few times a second per segment. */
  const reportProgress = async (runId: string, index: number, rows: number, quarantined: number, done: boolean) => {
    try {
      await progress.segment(runId, index, rows, quarantined, done);
      const p = await progress.read(runId);
      const job = p && (await Job.fromId(runsQueue, runId));
      if (job) await job.updateProgress({ ...p });
    } catch (err) {
      log.warn({ err: errorMessage(err), runId }, 'could not report progress');
    }
  };

  /**
   * On shutdown, a job is handed back (delayed to now, no attempt spent); otherwise the error is
   * mapped for BullMQ, and a final failure writes the failed run's manifest.
   */
  const handBackOrFail = async (
    job: Job,
    token: string | undefined,
    err: unknown,
    where: string,
    jobLog: Logger,
    onFinal: (e: Error) => Promise<unknown>,
  ): Promise<Error> => {
    if (shutdown.signal.aborted && token) {
      await job.moveToDelayed(Date.now(), token);
      jobLog.info({ where }, 'handed back on shutdown');
      return new DelayedError();
    }
    const mapped = toQueueError(err);
    jobLog.error({ err: errorMessage(err), code: (err as BatchScorerError).code, attempt: job.attemptsMade + 1 }, 'job failed');
    if (isFinalFailure(mapped, job.attemptsMade, job.opts.attempts)) await onFinal(err as Error);
    return mapped;
  };

  const common = { connection: redis, prefix: queue.prefix, lockDuration: options.lockDurationMs, stalledInterval: Math.max(1_000, options.lockDurationMs / 2), maxStalledCount: 10 };
  const runsWorker = new Worker<RunJobData>(RUNS_QUEUE, processRun, { ...common, concurrency: 2 });
  const segmentsWorker = new Worker<SegmentJobData>(SEGMENTS_QUEUE, processSegment, { ...common, concurrency: options.segments });
  for (const w of [runsWorker, segmentsWorker]) w.on('error', (err) => log.error({ err: errorMessage(err) }, 'queue error (retrying)'));
  log.info({ worker: WORKER_ID, prefix: queue.prefix, concurrency: options.concurrency, segments: options.segments }, 'worker started');

  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        log.info({ timeoutMs: options.shutdownTimeoutMs }, 'shutting down: taking no more work');
        const timer = setTimeout(() => {
          log.warn('shutdown timeout: handing in-flight segments back');
          shutdown.abort(new AbortedError('worker shutting down'));
        }, options.shutdownTimeoutMs);
        // Cleanups run in reverse order of opening, each even when one before it failed.
        const steps: [string, () => Promise<unknown>][] = [
          ['workers', () => Promise.all([runsWorker.close(), segmentsWorker.close()])],
          ['queues', () => Promise.all([runsQueue.close(), segmentsQueue.close()])],
          ['service clients', () => Promise.all([...clients.values()].map((c) => c.close()))],
          ['redis', () => redis.quit()],
        ];
        for (const [name, step] of steps) {
          try {
            await step();
          } catch (err) {
            log.error({ err: errorMessage(err), step: name }, 'shutdown step failed');
          }
        }
        clearTimeout(timer);
        log.info('worker stopped');
      })()),
  };
}

/** Runs a worker has seen recently; older ones are forgotten so a long-lived worker does not grow. */
const REMEMBERED_RUNS = 64;

function remember<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
    if (map.size > REMEMBERED_RUNS) map.delete(map.keys().next().value!);
  }
  return value;
}
