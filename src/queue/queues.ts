import { hostname } from 'node:os';
import { z } from 'zod';
import { formatIssues, type RetentionSettings, type RunOptionsInput, runOptionsSchema, type RunPriority } from '../config/index.js';
import { UsageError } from '../errors.js';
import { runFiles, type RunTrigger, runTriggerSchema } from '../scoring/index.js';
import { basename, type Location, storedLocationSchema } from '../storage/index.js';
import { QueueCluster } from './queue-cluster.js';
import { QueueRedis } from './queue-redis.js';
import { redisTarget } from './redis-target.js';

/** Runs: one job per run, stepping plan → score (waiting for its segments) → assemble. */
export const RUNS_QUEUE = 'runs';
/** Segments: one job per segment of a run, taken by any worker; children of their run's job. */
export const SEGMENTS_QUEUE = 'segments';

/**
 * Schedules: BullMQ job schedulers, one per scheduled pipeline of `jobs/*.yaml` (`schedule sync`);
 * each job they fire is turned by a worker into a run on the runs queue.
 */
export const SCHEDULES_QUEUE = 'schedules';

/** Where the queues live; the prefix carries a `{hash tag}` so every key of it sits on one Redis Cluster slot. */
export interface QueueConfig {
  redisUrl: string;
  prefix: string;
}

/**
 * A run job's data as written to Redis: what was asked, plus where the run got to, so a retried or
 * resumed job goes on from there. Options hold only what the enqueuer set; the worker fills in its
 * own defaults (its MODEL_SERVICE_URL and config files), so producers need not know the deployment.
 * `request` stays text: it is the request as typed (its input may be a glob), and the run folder's
 * claim and run.json store it so; the run folder it names is parsed once, by runJobDataSchema.
 */
export interface RunJobData {
  runId: string;
  request: { input: string; model: string; out: string; options: RunOptionsInput; trigger?: RunTrigger };
  step?: 'score' | 'assemble';
  startedAt?: string;
  /** When planning ended (ms since the epoch), for the manifest's timings. */
  plannedAt?: number;
  /** How the run's attempt ended, kept by keepRunResult (see run-results.ts): what views read its state from. */
  result?: unknown;
}

/** A run job's data as a worker reads it (runJobDataSchema): its run folder, `<out>/<runId>`, parsed. */
export type RunJob = RunJobData & { folder: Location };

const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A run id in job data, by the rule `--run-id` takes: it names the run folder (`<out>/<runId>`) and
 * job ids, so text that climbs out of its output root (`../x`) never reaches storage or a listener.
 */
const jobRunIdSchema = runOptionsSchema.shape.runId.unwrap();

/**
 * How a worker reads a run job's data (see readJobData). Job data may come from any producer that
 * can write to Redis, or from another release: its options are checked where its defaults are
 * known (askedRequest); its run id by the run-id rule, and its trigger by its schema, here.
 */
export const runJobDataSchema: z.ZodType<RunJob, RunJobData> = z
  .object({
    runId: jobRunIdSchema,
    request: z.object({
      input: z.string(),
      model: z.string(),
      out: z.string(),
      options: z.custom<RunOptionsInput>(isObject, 'must be an object'),
      trigger: runTriggerSchema.optional(),
    }),
    step: z.enum(['score', 'assemble']).optional(),
    startedAt: z.string().optional(),
    plannedAt: z.number().optional(),
  })
  .transform((data, ctx) => {
    const out = storedLocationSchema.safeParse(data.request.out);
    if (out.success) return { ...data, folder: runFiles.folderIn(out.data, data.runId) };
    for (const issue of out.error.issues) ctx.issues.push({ code: 'custom', message: issue.message, input: data.request.out, path: ['request', 'out'] });
    return z.NEVER;
  });

/** A segment job's data: small, since segment results live in storage, not in Redis. */
export const segmentJobDataSchema = z
  .object({
    runId: jobRunIdSchema,
    /** The run folder, `<out>/<runId>`, where `_work/run.json` says everything else: text in Redis, a location once read. */
    folder: storedLocationSchema,
    index: z.int().min(0),
    /**
     * The run job's creation time: a run enqueued again (a resume, maybe with a higher
     * --max-error-rate) may have rewritten `_work/run.json`, so workers read it again per generation.
     */
    generation: z.number(),
  })
  .refine((data) => basename(data.folder) === data.runId, { message: 'must be the run folder <out>/<runId> of its runId', path: ['folder'] });
/** A segment job's data as written to Redis (its folder as text, formatLocation's). */
export type SegmentJobData = z.input<typeof segmentJobDataSchema>;

/**
 * A job's data read through its queue's schema, at the worker's door, so code past it sees
 * checked values (locations parsed) and never re-parses text. Data that does not fit (written by
 * hand, or by a release that wrote another shape) is E_USAGE naming each field, never passed on
 * to fail obscurely; E_USAGE is not retriable, so the job fails at once.
 */
export function readJobData<T>(schema: z.ZodType<T, unknown>, job: { id?: string; queueName: string; data: unknown }): T {
  const read = schema.safeParse(job.data);
  if (read.success) return read.data;
  throw new UsageError(`job ${job.id ?? '?'} of queue ${job.queueName}: its data cannot be read (${formatIssues(read.error)})`);
}

/**
 * A segment's job id. `generation` is the run job's creation time: a run job made again (a failed
 * run enqueued anew) gets segment jobs of its own, never the leftovers of the one before.
 */
export const segmentJobId = (runId: string, generation: number, index: number) => `${runId}.${generation}.seg-${index}`;

/** The run of a segment job id (see segmentJobId), undefined for an id of another shape. */
export const segmentJobRun = (jobId: string): string | undefined => /^(.+)\.\d+\.seg-\d+$/.exec(jobId)?.[1];

/**
 * Bounded retention of finished jobs by default, age in seconds (BullMQ would otherwise keep them
 * all). The workers apply those of runs and segments, under the deployment's retention settings
 * (see keptJobs); the schedules queue's are its jobs' own.
 */
export const RETENTION = {
  runs: { removeOnComplete: { age: 7 * 24 * 3600, count: 1000 }, removeOnFail: { age: 30 * 24 * 3600, count: 5000 } },
  segments: { removeOnComplete: { age: 24 * 3600, count: 20_000 }, removeOnFail: { age: 7 * 24 * 3600, count: 20_000 } },
  /** Fired jobs of the schedules queue: each says which run it made, for as long as runs are kept. */
  schedules: { removeOnComplete: { age: 7 * 24 * 3600, count: 1000 }, removeOnFail: { age: 30 * 24 * 3600, count: 1000 } },
} as const;

/** How a queue's finished jobs are kept: BullMQ's `removeOnComplete` and `removeOnFail`, age in seconds. */
export interface JobRetention {
  removeOnComplete: { age: number; count: number };
  removeOnFail: { age: number; count: number };
}

/**
 * The soonest a finished job leaves its queue, in seconds, whatever RETENTION_OLDER_THAN says: those
 * following a run (`enqueue --wait`, `status --watch`, webhooks) read its end from its job.
 */
export const MIN_JOB_AGE_S = 3600;

/**
 * The retention of finished run and segment jobs under the deployment's settings (see
 * RetentionSettings): RETENTION_JOBS, where set, is the count kept of each end state, and
 * RETENTION_OLDER_THAN the age past which they go, where it is sooner than the default (but
 * never sooner than MIN_JOB_AGE_S). Applied by the workers, which finish the jobs, to jobs that ask
 * none of their own (releases before this one set theirs when they added them).
 */
export function keptJobs(settings: RetentionSettings): { runs: JobRetention; segments: JobRetention } {
  const kept = (defaults: { age: number; count: number }) => ({
    age: settings.olderThanMs === undefined ? defaults.age : Math.max(MIN_JOB_AGE_S, Math.min(defaults.age, Math.ceil(settings.olderThanMs / 1000))),
    count: settings.jobs ?? defaults.count,
  });
  const of = (queue: 'runs' | 'segments'): JobRetention => ({
    removeOnComplete: kept(RETENTION[queue].removeOnComplete),
    removeOnFail: kept(RETENTION[queue].removeOnFail),
  });
  return { runs: of('runs'), segments: of('segments') };
}

/**
 * The BullMQ priority of a run's jobs (its run job and every segment job), lower taken sooner.
 * Every run has one, `normal` too: BullMQ takes a job without a priority (0) before any that has one.
 */
export const JOB_PRIORITY: Record<RunPriority, number> = { high: 1, normal: 2, low: 3 };

/** A run's priority as its job data asks it: `normal` when it asks none (or one this release does not know). */
export function runPriority(options: RunOptionsInput): RunPriority {
  return runOptionsSchema.shape.priority.safeParse(options.priority).data ?? 'normal';
}

/** Retries of passing failures; permanent ones are UnrecoverableError and fail at once. */
export const ATTEMPTS = {
  runs: { attempts: 5, backoff: { type: 'exponential', delay: 5_000 } },
  segments: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
  schedules: { attempts: 5, backoff: { type: 'exponential', delay: 2_000 } },
} as const;

/** A connection of queue mode, to one Redis node or to a Redis Cluster, with the same extras. */
export type QueueConnection = QueueRedis | QueueCluster;

/**
 * A Redis connection by BullMQ's rules: workers need `maxRetriesPerRequest: null` (their blocking
 * commands must wait out a Redis restart); producers keep the default, so a call fails fast
 * when Redis is away instead of hanging a script. A connection dropped while Redis is away has
 * a dead socket that never reports closing; ioredis's 2 s wait for it would only delay exit.
 * A cluster URL makes a QueueCluster, whose node connections take these options; a queue prefix
 * without a hash tag is refused for it (E_CONFIG, see redisTarget).
 */
export function redisConnection(queue: QueueConfig, role: 'worker' | 'producer'): QueueConnection {
  const target = redisTarget(queue);
  const options = { maxRetriesPerRequest: role === 'worker' ? null : 3, disconnectTimeout: 200 };
  if (target.kind === 'node') return new QueueRedis(target.url, options);
  const { seeds, username, password, tls, shownUrl } = target;
  return new QueueCluster(seeds, { redisOptions: { ...options, username, password, ...(tls ? { tls: {} } : {}) } }, shownUrl);
}

/** This process, as the manifest names the workers that took part. */
export const WORKER_ID = `${hostname()}:${process.pid}`;
