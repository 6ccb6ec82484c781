import { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { parseRunOptions, type RunOptionsInput } from '../config/run-options.js';
import { newRunId, type RunRequest } from '../pipeline/prepare-run.js';
import type { RunProgress } from '../pipeline/progress.js';
import { parseModelRef } from '../service/model-ref.js';
import { formatLocation, joinLocation, parseLocation } from '../storage/location.js';
import { ATTEMPTS, RETENTION, RUNS_QUEUE, redisConnection, type QueueConfig, type RunJobData } from './queues.js';
import { RunProgressStore } from './run-progress.js';

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
 */
export function validateSubmission(submission: RunSubmission): RunRequest & { runId: string } {
  parseLocation(submission.input);
  parseLocation(submission.out);
  parseModelRef(submission.model);
  const options = parseRunOptions(submission.options ?? {}, 'options');
  const runId = options.runId ?? newRunId();
  return { input: submission.input, model: submission.model, out: submission.out, options: { ...options, runId }, runId };
}

/** The producer side of queue mode: enqueue runs and read their state. `close()` is safe twice. */
export class RunQueue {
  private readonly redis: Redis;
  private readonly queue: Queue<RunJobData>;
  private readonly progress: RunProgressStore;
  private closed?: Promise<void>;

  constructor(config: QueueConfig) {
    this.redis = redisConnection(config.redisUrl, 'producer');
    this.queue = new Queue<RunJobData>(RUNS_QUEUE, { connection: this.redis, prefix: config.prefix });
    this.progress = new RunProgressStore(this.redis, config.prefix);
  }

  /**
   * Enqueues a run under its run id as job id: the same run id twice is one run (`created: false`
   * the second time, while BullMQ keeps the job).
   */
  async enqueue(submission: RunSubmission): Promise<{ runId: string; created: boolean }> {
    const { runId, ...request } = validateSubmission(submission);
    if (await this.queue.getJob(runId)) return { runId, created: false };
    await this.queue.add('run', { runId, request }, { jobId: runId, ...ATTEMPTS.runs, ...RETENTION.runs });
    return { runId, created: true };
  }

  async get(runId: string): Promise<RunStatus | undefined> {
    const job = await Job.fromId<RunJobData>(this.queue, runId);
    return job ? this.describe(job) : undefined;
  }

  /** The most recent runs, newest first. */
  async list(limit = 20): Promise<RunStatus[]> {
    const jobs = await this.queue.getJobs(['active', 'waiting-children', 'waiting', 'delayed', 'prioritized', 'completed', 'failed'], 0, limit - 1);
    jobs.sort((a, b) => b.timestamp - a.timestamp);
    return Promise.all(jobs.slice(0, limit).map((j) => this.describe(j)));
  }

  /** The milestones a run's job logged (planned, segment k done, assembled). */
  async logs(runId: string): Promise<string[]> {
    return (await this.queue.getJobLogs(runId)).logs;
  }

  close(): Promise<void> {
    return (this.closed ??= this.queue.close().then(async () => {
      await this.redis.quit();
    }));
  }

  private async describe(job: Job<RunJobData>): Promise<RunStatus> {
    const raw = await job.getState();
    const state = raw === 'completed' || raw === 'failed' ? raw : raw === 'active' || raw === 'waiting-children' ? 'active' : 'waiting';
    const stored = typeof job.progress === 'object' ? (job.progress as unknown as RunProgress) : undefined;
    const progress = (await this.progress.read(job.data.runId)) ?? stored;
    const failedReason = state === 'failed' ? ((await this.progress.failure(job.data.runId)) ?? job.failedReason) : undefined;
    return {
      runId: job.data.runId,
      state,
      ...(progress ? { progress } : {}),
      ...(failedReason ? { failedReason } : {}),
      attempts: job.attemptsMade,
      folder: formatLocation(joinLocation(parseLocation(job.data.request.out), job.data.runId)),
      input: job.data.request.input,
      model: job.data.request.model,
      enqueuedAt: new Date(job.timestamp).toISOString(),
      ...(job.finishedOn ? { finishedAt: new Date(job.finishedOn).toISOString() } : {}),
    };
  }
}
