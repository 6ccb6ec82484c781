import { Job, Queue } from 'bullmq';
import { parseRunOptions, type RunOptionsInput } from '../config/run-options.js';
import { BatchScorerError } from '../errors.js';
import { newRunId } from '../pipeline/prepare-run.js';
import { runFiles } from '../pipeline/prepared-run.js';
import type { RunProgress } from '../pipeline/progress.js';
import { parseModelRef } from '../service/model-ref.js';
import { formatLocation, parseLocation } from '../storage/location.js';
import { redisUnavailable, type QueueRedis } from './queue-redis.js';
import { ATTEMPTS, RETENTION, RUNS_QUEUE, redisConnection, type QueueConfig, type RunJobData } from './queues.js';
import { RunProgressStore } from './run-progress.js';

/** How long a producer waits for Redis to answer at first before it gives up. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** A run as `status` and the run API show it. */
export interface RunStatus {
  runId: string;
  /** `waiting` (queued or backing off), `active` (planning, scoring or assembling), `completed`, `failed`. */
  state: 'waiting' | 'active' | 'completed' | 'failed';
  progress?: RunProgress;
  /** The reason of a failed run, with its error code. */
  failedReason?: string;
  attempts: number;
  /** The run folder, `<out>/<runId>`. */
  folder: string;
  input: string;
  model: string;
  out: string;
  /** The run options the enqueuer set (the worker fills in the rest from its own settings). */
  options: RunOptionsInput;
  enqueuedAt: string;
  finishedAt?: string;
}

/** What to score; validated before anything reaches Redis. */
export interface RunSubmission {
  input: string;
  model: string;
  out: string;
  options?: RunOptionsInput;
}

/**
 * Checks a submission the way a run would (locations, model name, options) and fixes its run
 * id, so bad runs are refused at the door with a message instead of failing in a worker.
 * Local paths become absolute here, in the enqueuer's directory, not in each worker's.
 */
export function validateSubmission(submission: RunSubmission): RunJobData {
  parseModelRef(submission.model);
  const runId = parseRunOptions(submission.options ?? {}, 'options').runId ?? newRunId();
  return {
    runId,
    request: {
      input: formatLocation(parseLocation(submission.input)),
      model: submission.model,
      out: formatLocation(parseLocation(submission.out)),
      options: { ...submission.options, runId },
    },
  };
}

/**
 * The producer side of queue mode: enqueue runs and read their state. `close()` is safe twice.
 * Its first call waits for Redis for CONNECT_TIMEOUT_MS at most, then fails with
 * E_REDIS_UNAVAILABLE; once connected, a call during a Redis restart fails after a few tries
 * and the next one goes through when Redis is back.
 */
export class RunQueue {
  private readonly redis: QueueRedis;
  private readonly queue: Queue<RunJobData>;
  private readonly progress: RunProgressStore;
  private connected?: Promise<void>;
  private lastError?: Error;
  private closed?: Promise<void>;

  constructor(config: QueueConfig) {
    this.redis = redisConnection(config.redisUrl, 'producer');
    this.queue = new Queue<RunJobData>(RUNS_QUEUE, { connection: this.redis, prefix: config.prefix });
    this.progress = new RunProgressStore(this.redis, config.prefix);
    // Every failed connection attempt is an 'error' event: kept for the message, and listened to,
    // since ioredis and BullMQ print an error event nobody listens to, stack and all.
    const keep = (err: Error) => void (this.lastError = err);
    this.redis.on('error', keep);
    this.queue.on('error', keep);
  }

  /**
   * Enqueues a run under its run id as job id: the same run id twice is one run (`created: false`
   * the second time, while BullMQ keeps the job). A run that failed is enqueued again
   * (`resumed: true`): its job and segment jobs are replaced, and the segments it finished, kept
   * in storage, are not scored again.
   */
  async enqueue(submission: RunSubmission): Promise<{ runId: string; created: boolean; resumed?: boolean }> {
    const data = validateSubmission(submission);
    const { runId } = data;
    await this.ready();
    const existing = await this.queue.getJob(runId);
    const failed = existing !== undefined && (await existing.getState()) === 'failed';
    if (existing && !failed) return { runId, created: false };
    if (failed) {
      if ((await this.queue.remove(runId, { removeChildren: true })) !== 1) {
        throw new BatchScorerError(
          'E_RUN_EXISTS',
          `run ${runId} failed, but its job could not be replaced (a worker still holds one of its segments); try again in a minute`,
          { retriable: true },
        );
      }
      await this.progress.clear(runId);
    }
    await this.queue.add('run', data, { jobId: runId, ...ATTEMPTS.runs, ...RETENTION.runs });
    return { runId, created: true, ...(failed ? { resumed: true } : {}) };
  }

  async get(runId: string): Promise<RunStatus | undefined> {
    await this.ready();
    const job = await Job.fromId<RunJobData>(this.queue, runId);
    return job ? this.describe(job) : undefined;
  }

  /** The most recent runs, newest first. */
  async list(limit = 20): Promise<RunStatus[]> {
    await this.ready();
    const jobs = await this.queue.getJobs(['active', 'waiting-children', 'waiting', 'delayed', 'prioritized', 'completed', 'failed'], 0, limit - 1);
    jobs.sort((a, b) => b.timestamp - a.timestamp);
    return Promise.all(jobs.slice(0, limit).map((j) => this.describe(j)));
  }

  /** The milestones a run's job logged (planned, segment k done, assembled), from the `from`th on (0-based). */
  async logs(runId: string, from = 0): Promise<string[]> {
    await this.ready();
    return (await this.queue.getJobLogs(runId, from)).logs;
  }

  close(): Promise<void> {
    return (this.closed ??= this.queue.close().then(() => this.redis.close()));
  }

  /** Resolves once Redis has answered; the first wait is bounded, and a failed one is final. */
  private ready(): Promise<void> {
    return (this.connected ??= (async () => {
      const answered = this.queue.waitUntilReady();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('still connecting')), CONNECT_TIMEOUT_MS)));
      try {
        await Promise.race([answered, timedOut]);
      } catch (err) {
        this.redis.disconnectAll();
        answered.catch(() => {}); // it fails too once disconnected; the reason is known already
        throw redisUnavailable(this.redis, CONNECT_TIMEOUT_MS, this.lastError ?? err);
      } finally {
        clearTimeout(timer);
      }
    })());
  }

  private async describe(job: Job<RunJobData>): Promise<RunStatus> {
    const raw = await job.getState();
    const state = raw === 'completed' || raw === 'failed' ? raw : raw === 'active' || raw === 'waiting-children' ? 'active' : 'waiting';
    const stored = typeof job.progress === 'object' ? (job.progress as unknown as RunProgress) : undefined;
    const finished = state === 'completed' || state === 'failed';
    const progress = (await this.progress.read(job.data.runId, finished ? job.finishedOn : undefined)) ?? stored;
    const failedReason = state === 'failed' ? ((await this.progress.failure(job.data.runId)) ?? job.failedReason) : undefined;
    return {
      runId: job.data.runId,
      state,
      ...(progress ? { progress } : {}),
      ...(failedReason ? { failedReason } : {}),
      attempts: job.attemptsMade,
      folder: formatLocation(runFiles.folder(job.data.request.out, job.data.runId)),
      input: job.data.request.input,
      model: job.data.request.model,
      out: job.data.request.out,
      options: job.data.request.options,
      enqueuedAt: new Date(job.timestamp).toISOString(),
      ...(job.finishedOn ? { finishedAt: new Date(job.finishedOn).toISOString() } : {}),
    };
  }
}
