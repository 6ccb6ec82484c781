import { setTimeout as sleep } from 'node:timers/promises';
import { Job, Queue, type JobType } from 'bullmq';
import { CAP_OPTIONS, checkInputOptions, formatRunInput, parseRunInput, parseRunOptions, type RunOptionsInput, type RunPriority } from '../config/index.js';
import { BatchScorerError } from '../errors.js';
import {
  isResumable,
  isSettled,
  type Manifest,
  newRunId,
  type ObjectVersion,
  checkTableOptions,
  requestDifference,
  requireNext,
  runFiles,
  type RunProgress,
  type RunRequest,
  runResult,
  type RunResult,
  type RunState,
  type RunTrigger,
  runTriggerSchema,
  triggerPipeline,
} from '../scoring/index.js';
import { parseModelRef } from '../service/index.js';
import { formatLocation, parseLocation } from '../storage/index.js';
import { OwnConnectionQueue } from './own-connection-queue.js';
import {
  ATTEMPTS,
  JOB_PRIORITY,
  RUNS_QUEUE,
  SEGMENTS_QUEUE,
  runPriority,
  segmentJobRun,
  type QueueConfig,
  type RunJobData,
  type SegmentJobData,
} from './queues.js';
import { CANCEL_POLL_MS } from './cancel-watch.js';
import { FileDropClaims, fileVersionField, type FileDropClaim } from './file-drop-claims.js';
import { IdempotencyKeys, type EnqueueAnswer, type IdempotencyKeysOptions, type IdempotentRequest } from './idempotency-keys.js';
import { PipelineRuns } from './pipeline-runs.js';
import { RunCancels, type CancelMark } from './run-cancel.js';
import { RunKeys } from './run-keys.js';
import { RunProgressStore } from './run-progress.js';
import { keepRunResult, keptResult } from './run-results.js';

/** How long cancel() waits for an assembly already under way to end (it decides the answer). */
const ASSEMBLY_WAIT_MS = 60_000;

/** How long enqueueing an ended run again waits for a worker to let go of one of its jobs (see replaceable). */
const REPLACE_WAIT_MS = 10_000;

/** A cancelled run's job may be in any state but completed: it fails, with E_CANCELLED, once a worker takes it after the cancel. */
const CANCELLED_JOB_STATES: JobType[] = ['active', 'waiting-children', 'waiting', 'delayed', 'prioritized', 'failed'];

/**
 * The BullMQ states a run job may be in while its run is in a given state (see run-lifecycle.ts):
 * a job that failed holds the result of its attempt (see keepRunResult), which says whether the
 * run failed, expired, was cancelled, is held, or was held and then accepted.
 */
const JOB_STATES: Record<RunState, JobType[]> = {
  queued: ['waiting', 'delayed', 'prioritized'],
  running: ['active', 'waiting-children'],
  cancelling: CANCELLED_JOB_STATES,
  succeeded: ['completed', 'failed'],
  failed: ['failed'],
  cancelled: CANCELLED_JOB_STATES,
  expired: ['failed'],
  held: ['failed'],
};

const ALL_JOB_STATES = [...new Set(Object.values(JOB_STATES).flat())];

/** Which runs `list` answers: see RunQueue.list. */
export interface RunListOptions {
  /** Runs answered at most (20 by default). */
  limit?: number;
  /** Matching runs skipped first, newest first (0 by default): the page's start. */
  offset?: number;
  state?: RunState;
  pipeline?: string;
}

/** A run as `status` and the run API show it. */
export interface RunStatus {
  runId: string;
  state: RunState;
  progress?: RunProgress;
  /** How the run's last attempt ended (see RunResult): what views tell of a settled run. */
  result?: RunResult;
  /** The reason BullMQ keeps for a run job that failed without a result (it stalled past its limit, or its worker could not keep one). */
  failedReason?: string;
  attempts: number;
  /** The run folder, `<out>/<runId>`. */
  folder: string;
  input: string;
  model: string;
  out: string;
  /** The run options the enqueuer set (the worker fills in the rest from its own settings). */
  options: RunOptionsInput;
  /** How soon workers take its jobs (its `priority` option, `normal` when unset). */
  priority: RunPriority;
  /** What started the run; absent for runs enqueued by releases that kept none. */
  trigger?: RunTrigger;
  /** The `jobs/*.yaml` pipeline that started the run, if one did. */
  pipeline?: string;
  enqueuedAt: string;
  finishedAt?: string;
}

/** No run of this id on the queue (E_RUN_NOT_FOUND, exit 2). */
export function runNotFound(runId: string): BatchScorerError {
  return new BatchScorerError(
    'E_RUN_NOT_FOUND',
    `no run ${runId} in the queue (finished runs are kept as the workers' retention says: by default 7 days, failed ones 30; see RETENTION_JOBS)`,
  );
}

/** What to score; validated before anything reaches Redis. */
export interface RunSubmission {
  input: string;
  model: string;
  out: string;
  options?: RunOptionsInput;
  /** What started the run, for its manifest. */
  trigger?: RunTrigger;
}

/** A run a file drop starts: its trigger names the pipeline and the file version, and its options the run id it proposes. */
export type FileDropSubmission = RunSubmission & {
  options: RunOptionsInput & { runId: string };
  trigger: Extract<RunTrigger, { kind: 'event' | 'poll' }>;
};

/** How `enqueue` treats a run of the same id that failed or was cancelled, and a submission sent again. */
export interface EnqueueOptions {
  /**
   * `resume` (the default, what a person asking again means): enqueue it again, keeping its
   * finished segments. `keep`: leave it as it is, as a trigger seeing the same file again must.
   */
  ifEnded?: 'resume' | 'keep';
  /** `POST /runs`'s Idempotency-Key: the first answer given with it is answered again (`replayed`) for 24 h, see IdempotencyKeys. */
  idempotency?: IdempotentRequest;
}

/**
 * Checks a submission the way a run would (locations, model name, options) and fixes its run
 * id, so bad runs are refused at the door with a message instead of failing in a worker.
 * Local paths become absolute here, in the enqueuer's directory, not in each worker's.
 */
export function validateSubmission(submission: RunSubmission): RunJobData {
  parseModelRef(submission.model);
  const parsed = parseRunOptions(submission.options ?? {}, 'options');
  const input = parseRunInput(submission.input);
  checkInputOptions(input, parsed, 'fields');
  checkTableOptions(submission.input, parsed);
  const runId = parsed.runId ?? newRunId();
  return {
    runId,
    request: {
      input: formatRunInput(input),
      model: submission.model,
      out: formatLocation(parseLocation(submission.out)),
      // A --deadline given as a duration counts from now: stored as the time it means, for every worker.
      options: { ...submission.options, runId, ...(parsed.deadline !== undefined && { deadline: parsed.deadline }) },
      ...(submission.trigger ? { trigger: submission.trigger } : {}),
    },
  };
}

/**
 * A run that failed or was cancelled, enqueued again under its id, resumes what it was asked: the
 * same input, output, model and output-shaping options (what its folder's claim holds too), else
 * it is refused at once (E_RUN_EXISTS, naming what differs) instead of failing in a worker. Options
 * the enqueuer left out are compared as their defaults.
 */
function refuseOtherOutput(stored: RunJobData, asked: RunJobData): void {
  const asRequest = ({ request }: RunJobData): RunRequest => ({ ...request, options: parseRunOptions(request.options, 'options') });
  const difference = requestDifference(asRequest(stored), asRequest(asked));
  if (difference) {
    throw new BatchScorerError(
      'E_RUN_EXISTS',
      `run ${asked.runId} was enqueued for another output: this asks ${difference}; resume it as it was asked (batch-scorer resume ${asked.runId}), or choose another --run-id`,
    );
  }
}

/**
 * The calls of a RunQueue that the run API, its pages and the triggers make, and which what
 * stands in for one (policedRuns, ReconnectingRunQueue) answers too.
 */
export type RunQueueCalls = Pick<RunQueue, 'enqueue' | 'enqueueFileDrop' | 'get' | 'list' | 'cancel' | 'resume' | 'judged'>;

/** How a RunQueue keeps what it keeps besides jobs: see IdempotencyKeysOptions. */
export type RunQueueOptions = IdempotencyKeysOptions;

/**
 * The producer side of queue mode: enqueue runs and read their state. `close()` is safe twice.
 * Its first call waits for Redis for CONNECT_TIMEOUT_MS (own-connection-queue.ts) at most, then fails with
 * E_REDIS_UNAVAILABLE; once connected, a call during a Redis outage waits for it as long again,
 * then fails the same way, and the next one goes through when Redis is back. Errors are BatchScorerErrors: E_USAGE for a
 * bad submission, E_RUN_NOT_FOUND for an unknown run, E_RUN_CONFLICT for a run in a state that
 * does not allow the request, E_REDIS_UNAVAILABLE.
 */
export class RunQueue {
  private readonly producer: OwnConnectionQueue<RunJobData>;
  private readonly queue: Queue<RunJobData>;
  /** Read, not written: which segment jobs are active tells a cancelling run from a cancelled one. */
  private readonly segments: Queue<SegmentJobData>;
  private readonly progress: RunProgressStore;
  private readonly cancels: RunCancels;
  private readonly drops: FileDropClaims;
  private readonly pipelineRuns: PipelineRuns;
  private readonly idempotency: IdempotencyKeys;
  private readonly runKeys: RunKeys;
  private closed?: Promise<void>;

  constructor(config: QueueConfig, options: RunQueueOptions = {}) {
    this.producer = new OwnConnectionQueue<RunJobData>(config, RUNS_QUEUE);
    const { redis, queue } = this.producer;
    this.queue = queue;
    this.segments = new Queue<SegmentJobData>(SEGMENTS_QUEUE, { connection: redis, prefix: config.prefix });
    // Its errors are those of the shared connection, which the producer reports.
    this.segments.on('error', () => {});
    this.progress = new RunProgressStore(redis, config.prefix);
    this.cancels = new RunCancels(redis, config.prefix);
    this.drops = new FileDropClaims(redis, config.prefix);
    this.pipelineRuns = new PipelineRuns(redis, config.prefix);
    this.idempotency = new IdempotencyKeys(redis, config.prefix, options);
    this.runKeys = new RunKeys(redis, config.prefix);
  }

  /**
   * Enqueues a run under its run id as job id: the same run id twice is one run (`created: false`
   * the second time, while BullMQ keeps the job). A run that failed or was cancelled is enqueued
   * again (`resumed: true`): its job and segment jobs are replaced, and the segments it finished,
   * kept in storage, are not scored again; unless `ifEnded: 'keep'`, which leaves it. A run still
   * `cancelling` is refused (E_RUN_CONFLICT) until its jobs have stopped. With an `idempotency`
   * key, a submission sent again within 24 h is answered as it was the first time.
   */
  async enqueue(submission: RunSubmission, options: EnqueueOptions = {}): Promise<EnqueueAnswer & { replayed?: true }> {
    const { idempotency, ...rest } = options;
    if (!idempotency) return this.enqueueRun(submission, rest);
    await this.ready();
    return this.idempotency.once(idempotency, () => this.enqueueRun(submission, rest));
  }

  /**
   * Removes an ended run's jobs so that it can be enqueued again. A run reads `cancelled` while a
   * worker may still hold one of its jobs for a moment: the run job taken only to end the run, or
   * a segment job taken just then, which reads the marker and stops. BullMQ refuses to remove a
   * held job (and removes nothing then), so the removal is tried again until REPLACE_WAIT_MS.
   */
  private async replaceable(runId: string): Promise<boolean> {
    const deadline = Date.now() + REPLACE_WAIT_MS;
    while ((await this.queue.remove(runId, { removeChildren: true })) !== 1) {
      if (Date.now() >= deadline) return false;
      await sleep(CANCEL_POLL_MS);
    }
    return true;
  }

  private async enqueueRun(submission: RunSubmission, options: Omit<EnqueueOptions, 'idempotency'>): Promise<EnqueueAnswer> {
    const data = validateSubmission(submission);
    const { runId } = data;
    await this.ready();
    const existing = await this.queue.getJob(runId);
    const state = existing && (await this.stateOf(existing)).state;
    if (state === 'cancelling' && options.ifEnded !== 'keep') throw stillCancelling(runId, 'enqueued again');
    const resumed = state !== undefined && isResumable(state) && options.ifEnded !== 'keep';
    if (existing && !resumed) return { runId, created: false };
    const pipeline = triggerPipeline(data.request.trigger);
    // Before its job is added or replaced: a worker's sweep never takes the keys of a run being enqueued.
    await this.runKeys.touch(runId, pipeline);
    if (existing && resumed) {
      refuseRejected(runId, existing);
      refuseOtherOutput(existing.data, data);
      if (!(await this.replaceable(runId))) {
        throw new BatchScorerError(
          'E_RUN_CONFLICT',
          `run ${runId} is ${state}, but its job could not be replaced (a worker still holds one of its jobs); try again in a minute`,
        );
      }
      await this.progress.clear(runId);
    }
    // Also a marker left by a cancelled run of this id whose job is gone (past its retention).
    await this.cancels.clear(runId);
    const priority = JOB_PRIORITY[runPriority(data.request.options)];
    // Its retention is the workers' (see keptJobs), who finish it.
    const job = await this.queue.add('run', data, { jobId: runId, priority, ...ATTEMPTS.runs });
    if (pipeline) await this.pipelineRuns.add(pipeline, runId, job.timestamp);
    return { runId, created: true, ...(resumed ? { resumed } : {}) };
  }

  /**
   * Starts the run of one file version exactly once, however many events, polls, retries or
   * processes see it: the version (trigger's pipeline, location and ETag) is claimed for the
   * proposed run id unless it is claimed already, and the claimed run, whichever run id won, is
   * enqueued with `ifEnded: 'keep'` (a failed run is never restarted by another sighting).
   * `created` is true for one sighting only, the one that recorded the run as enqueued. A claim
   * whose enqueue did not happen (a crash in between) is completed by the next sighting.
   */
  async enqueueFileDrop(submission: FileDropSubmission): Promise<{ runId: string; created: boolean }> {
    validateSubmission(submission); // a bad submission claims nothing
    await this.ready();
    const { pipeline, object } = submission.trigger;
    const version = fileVersionField(object.location, object.etag);
    const [seen] = await this.drops.lookup(pipeline, [version]);
    if (seen?.enqueued) return { runId: seen.runId, created: false };
    const { runId } = seen ?? (await this.drops.claim(pipeline, version, submission.options.runId));
    // Sightings at the same moment may both get here: the job id makes their enqueues one run.
    await this.enqueue({ ...submission, options: { ...submission.options, runId } }, { ifEnded: 'keep' });
    return { runId, created: await this.drops.enqueued(pipeline, version, runId) };
  }

  /** The claims of these versions of files (see enqueueFileDrop), undefined for those never seen, in one round trip. */
  async fileDropClaims(pipeline: string, objects: readonly Pick<ObjectVersion, 'location' | 'etag'>[]): Promise<(FileDropClaim | undefined)[]> {
    await this.ready();
    return this.drops.lookup(
      pipeline,
      objects.map((o) => fileVersionField(o.location, o.etag)),
    );
  }

  async get(runId: string): Promise<RunStatus | undefined> {
    await this.ready();
    const job = await Job.fromId<RunJobData>(this.queue, runId);
    return job ? this.describe(job) : undefined;
  }

  /**
   * The most recent runs, newest first; with `state`, only the runs in that state; with
   * `pipeline`, only the runs that pipeline of `jobs/*.yaml` started; from the `offset`th of
   * those on (0-based), at most `limit`. The runs before `offset` are read too (their states
   * decide which pass), but never more of them than that.
   */
  async list(options: RunListOptions = {}): Promise<RunStatus[]> {
    const { limit = 20, offset = 0, state, pipeline } = options;
    await this.ready();
    const want = offset + limit;
    const found = pipeline === undefined ? await this.latestJobs(want, state) : await this.latestOfPipeline(pipeline, want, state);
    return Promise.all(found.slice(offset, want).map((j) => this.describe(j)));
  }

  /** The newest `want` run jobs, from BullMQ's lists by state. */
  private async latestJobs(want: number, state: RunState | undefined): Promise<Job<RunJobData>[]> {
    const types = state ? JOB_STATES[state] : ALL_JOB_STATES;
    const found: Job<RunJobData>[] = [];
    // A job's state is not the run's (a cancelled run's job may still be waiting): filtered page
    // by page, as BullMQ answers up to a page of each of its states.
    for (let start = 0; found.length < want; start += want) {
      const jobs = await this.queue.getJobs(types, start, start + want - 1);
      if (jobs.length === 0) break;
      if (!state) {
        found.push(...jobs);
        break;
      }
      found.push(...(await this.inState(jobs, state)));
    }
    found.sort((a, b) => b.timestamp - a.timestamp);
    return found.slice(0, want);
  }

  /** A pipeline's newest `want` run jobs, from its index (see PipelineRuns), newest first. */
  private async latestOfPipeline(pipeline: string, want: number, state: RunState | undefined): Promise<Job<RunJobData>[]> {
    const found: Job<RunJobData>[] = [];
    for (let start = 0; found.length < want; start += want) {
      const ids = await this.pipelineRuns.page(pipeline, start, want);
      if (ids.length === 0) break;
      const read = await Promise.all(ids.map((id) => Job.fromId<RunJobData>(this.queue, id)));
      const jobs = read.filter((j) => j !== undefined);
      // Past their retention: gone from the queue, and from the index now.
      await this.pipelineRuns.drop(
        pipeline,
        ids.filter((_, i) => read[i] === undefined),
      );
      start -= ids.length - jobs.length;
      found.push(...(state ? await this.inState(jobs, state) : jobs));
    }
    return found.slice(0, want);
  }

  private async inState(jobs: Job<RunJobData>[], state: RunState): Promise<Job<RunJobData>[]> {
    const states = await Promise.all(jobs.map(async (j) => (await this.stateOf(j)).state));
    return jobs.filter((_, i) => states[i] === state);
  }

  /**
   * Cancels a waiting or active run: its jobs stop on every worker within about a second, it is
   * never assembled, and its manifest says `cancelled`. Answers its status: `cancelling` while
   * some of its jobs still run, `cancelled` once none does (at once for a run no worker took);
   * cancelling it again answers its state then. E_RUN_NOT_FOUND for an unknown id,
   * E_RUN_CONFLICT for a run that is settled (see run-lifecycle.ts).
   */
  async cancel(runId: string): Promise<RunStatus> {
    const job = await this.requireJob(runId);
    const { state: before } = await this.stateOf(job);
    if (before === 'cancelling' || before === 'cancelled') return this.describe(job);
    requireNext(runId, before, 'cancel', 'cancelled');
    await this.cancels.mark(runId);
    // Segments no worker took yet go at once; those being scored stop when their workers see the
    // marker. A run job left with no segment is taken again, and ends the run as cancelled.
    await job.removeUnprocessedChildren();
    // The other half of the run job's cancel handshake (see run-job.ts): an assembly that began
    // before the marker was seen is not cut; its outcome decides the answer.
    let now = await this.requireJob(runId);
    const deadline = Date.now() + ASSEMBLY_WAIT_MS;
    while (now.data.step === 'assemble' && !(await this.stateOf(now)).ended && Date.now() < deadline) {
      await sleep(CANCEL_POLL_MS);
      now = await this.requireJob(runId);
    }
    const after = await this.describe(now);
    if (after.state !== 'cancelling' && after.state !== 'cancelled' && isSettled(after.state)) {
      // It finished meanwhile: too late to cancel, and the marker must not outlive the answer.
      await this.cancels.clear(runId);
      requireNext(runId, after.state, 'cancel', 'cancelled');
    }
    return after;
  }

  /**
   * Resumes a failed, cancelled or expired run: enqueued again from its stored request, keeping
   * the segments it finished, under the caps given (`caps`: --max-requests, --max-rows,
   * --deadline; none given, none). E_RUN_NOT_FOUND for an unknown id, E_RUN_CONFLICT for a
   * run in any other state (see run-lifecycle.ts).
   */
  async resume(runId: string, caps: Pick<RunOptionsInput, (typeof CAP_OPTIONS)[number]> = {}): Promise<{ runId: string; resumed: true }> {
    const job = await this.requireJob(runId);
    const { state } = await this.stateOf(job);
    if (state === 'cancelling') throw stillCancelling(runId, 'resumed');
    requireNext(runId, state, 'resume', 'resumed');
    refuseRejected(runId, job);
    const { input, model, out, trigger } = job.data.request;
    const options: RunOptionsInput = { ...job.data.request.options };
    for (const cap of CAP_OPTIONS) delete options[cap];
    const again = await this.enqueue({ input, model, out, options: { ...options, ...caps }, trigger });
    if (!again.created) throw new BatchScorerError('E_RUN_CONFLICT', `run ${runId} was resumed meanwhile`);
    return { runId, resumed: true };
  }

  /**
   * A held run was judged (see judgeRun): the result its manifest now records is kept beside its
   * job, where views read its state, and told to the runs' event stream. A run the queue never had
   * (scored by `score`) or no longer has keeps nothing here; its manifest is its record.
   */
  async judged(manifest: Manifest): Promise<void> {
    await this.ready();
    await keepRunResult(this.queue, this.producer.redis, manifest.runId, runResult(manifest));
  }

  /**
   * Removes an ended run from Redis for good (`runs prune`): its run job with its segment jobs,
   * and the keys it keeps beside them (see RunKeys); `pipeline` is the one its record names, for
   * a run whose job is gone. Answers false, removing nothing, when the run is not ended (queued,
   * running or cancelling), as when it was resumed since the caller looked.
   */
  async forget(runId: string, pipeline?: string): Promise<boolean> {
    await this.ready();
    const job = await Job.fromId<RunJobData>(this.queue, runId);
    if (job) {
      const { state, ended } = await this.stateOf(job);
      if (!ended || state === 'cancelling') return false;
      // BullMQ refuses a job a worker holds (a cancelled run's job taken only to end it): kept, as live.
      if ((await this.queue.remove(runId, { removeChildren: true })) !== 1) return false;
    }
    await this.runKeys.forget(runId, pipeline ?? triggerPipeline(runTriggerSchema.safeParse(job?.data.request.trigger).data));
    return true;
  }

  /** The milestones a run's job logged (planned, segment k done, assembled), from the `from`th on (0-based). */
  async logs(runId: string, from = 0): Promise<string[]> {
    await this.ready();
    return (await this.queue.getJobLogs(runId, from)).logs;
  }

  close(): Promise<void> {
    return (this.closed ??= this.segments.close().then(() => this.producer.close()));
  }

  /** Resolves once Redis has answered; the first wait is bounded, and a failed one is final. */
  private async ready(): Promise<void> {
    await this.producer.ready();
  }

  private async requireJob(runId: string): Promise<Job<RunJobData>> {
    await this.ready();
    const job = await Job.fromId<RunJobData>(this.queue, runId);
    if (!job) {
      throw runNotFound(runId);
    }
    return job;
  }

  /**
   * A run's state from its job's, and whether its job has ended. A job that ended keeps the result
   * of its attempt (see keepRunResult), which says how: read, never derived from its failed
   * reason. A run whose result says cancelled, or (its result lost) whose cancel marker is set, is
   * `cancelling` while one of its jobs still runs, then `cancelled`: established, not assumed, since
   * a segment failing its run (`failParentOnFailure`) ends the run job while siblings still score.
   */
  private async stateOf(job: Job<RunJobData>): Promise<{ state: RunState; ended: boolean; job: Job<RunJobData> }> {
    const raw = await job.getState();
    const { runId } = job.data;
    if (raw === 'completed' || raw === 'failed') {
      // A job that ended after this copy of it was read: its result and end time are in a fresh one.
      const ended =
        job.finishedOn === undefined || (raw === 'failed' && job.data.result === undefined)
          ? ((await Job.fromId<RunJobData>(this.queue, job.id!)) ?? job)
          : job;
      if (raw === 'completed') return { state: 'succeeded', ended: true, job: ended };
      const state = keptResult(ended.data)?.state;
      if (state !== undefined && state !== 'cancelled') return { state, ended: true, job: ended };
      const cancel = await this.cancels.read(runId);
      if (state === undefined && !cancel) return { state: 'failed', ended: true, job: ended };
      return { state: await this.cancelState(runId, cancel, false), ended: true, job: ended };
    }
    const cancel = await this.cancels.read(runId);
    if (cancel) return { state: await this.cancelState(runId, cancel, raw === 'active'), ended: false, job };
    return { state: raw === 'active' || raw === 'waiting-children' ? 'running' : 'queued', ended: false, job };
  }

  /**
   * A cancelled run's state: `cancelling` while one of its jobs still runs on some worker (its run
   * job, whose planning sends a probe request, or a segment job of any generation), then
   * `cancelled`, recorded in its marker. A job not running by then never scores (each reads the
   * marker first, once BullMQ made it active), so from then on no predict request of the run
   * starts, and a run job a worker takes later only to end it does not make it `cancelling` again.
   */
  private async cancelState(runId: string, cancel: CancelMark | undefined, runJobActive: boolean): Promise<'cancelling' | 'cancelled'> {
    if (cancel === 'stopped') return 'cancelled';
    if (runJobActive) return 'cancelling';
    // At most the segments every worker scores at once, whatever their runs.
    const active = await this.segments.getRanges(['active'], 0, -1);
    if (active.some((id) => segmentJobRun(id) === runId)) return 'cancelling';
    await this.cancels.stopped(runId);
    return 'cancelled';
  }

  private async describe(read: Job<RunJobData>): Promise<RunStatus> {
    const { state, ended: finished, job } = await this.stateOf(read);
    const stored = typeof job.progress === 'object' ? (job.progress as unknown as RunProgress) : undefined;
    const progress = (await this.progress.read(job.data.runId, finished ? job.finishedOn : undefined)) ?? stored;
    const result = finished ? keptResult(job.data) : undefined;
    const failedReason = finished && !result && job.failedReason ? ((await this.progress.failure(job.data.runId)) ?? job.failedReason) : undefined;
    // Job data written by other releases or by hand: a trigger that is not one is left out, not shown.
    const trigger = runTriggerSchema.safeParse(job.data.request.trigger).data;
    const pipeline = triggerPipeline(trigger);
    return {
      runId: job.data.runId,
      state,
      ...(progress ? { progress } : {}),
      ...(result ? { result } : {}),
      ...(failedReason ? { failedReason } : {}),
      attempts: job.attemptsMade,
      folder: formatLocation(runFiles.folder(job.data.request.out, job.data.runId)),
      input: job.data.request.input,
      model: job.data.request.model,
      out: job.data.request.out,
      options: job.data.request.options,
      priority: runPriority(job.data.request.options),
      ...(trigger ? { trigger } : {}),
      ...(pipeline ? { pipeline } : {}),
      enqueuedAt: new Date(job.timestamp).toISOString(),
      ...(job.finishedOn ? { finishedAt: new Date(job.finishedOn).toISOString() } : {}),
    };
  }
}

/** Refuses to resume a run whose held outputs were rejected: it failed for good (E_RUN_CONFLICT). */
function refuseRejected(runId: string, job: Job<RunJobData>): void {
  if (keptResult(job.data)?.rejected) {
    throw new BatchScorerError('E_RUN_CONFLICT', `run ${runId} was rejected: it failed for good and is not resumed; score it again under another run id`);
  }
}

/** The refusal to resume a run whose jobs are still stopping. */
function stillCancelling(runId: string, what: string): BatchScorerError {
  return new BatchScorerError(
    'E_RUN_CONFLICT',
    `run ${runId} is cancelling: its jobs are still stopping; it can be ${what} once it is cancelled, within seconds (batch-scorer status ${runId} --watch)`,
  );
}
