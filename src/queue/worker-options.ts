import type { DeploymentPolicy, Limits, RetentionSettings, RunOptionsInput } from '../config/index.js';
import { PROCESS_DEFAULTS } from '../process-defaults.js';
import type { Processor } from 'bullmq';
import type { PredictorFactory, RunListener, ScoringObserver } from '../scoring/index.js';
import type { RunJobData } from './queues.js';

/** A queue a worker process also takes jobs from, beside runs and segments, and what its processor holds. */
export interface AlsoProcessed {
  queue: string;
  processor: Processor;
  /** Releases what the processor holds; called once the process has stopped taking jobs. */
  close(): Promise<void>;
  /** Jobs taken at once (1 when absent). */
  concurrency?: number;
  /** The wait before a failed job's next attempt, for the jobs whose backoff type is not one of BullMQ's own. */
  backoffStrategy?: (attemptsMade: number) => number;
}

/** Options of one worker process. */
export interface WorkerOptions {
  /**
   * Predict requests in flight at most in this process, over all the segments it works on
   * (`--max-in-flight`): a cap of the process, where a run's `concurrency` is its budget across
   * every worker scoring it.
   */
  maxInFlight: number;
  /**
   * Segments this process holds at once at most. It takes a next one only once those it holds
   * have sent all their batches (see SegmentIntake): while a segment sends, it has the process's
   * request slots to itself, and the segments waiting go to idle workers first.
   */
  segments: number;
  /** How long SIGTERM waits for in-flight segments before handing them back, in ms. */
  shutdownTimeoutMs: number;
  /** BullMQ lock duration in ms: a killed worker's segments go back to the queue after about this long. */
  lockDurationMs: number;
  /**
   * Builds the service client of a run's options (with its origin's token, never logged); the
   * worker keeps one per service, time limit and retry count.
   */
  predictors: PredictorFactory;
  /**
   * What runs may read, write and call, checked before a run job or segment job reads or sends
   * anything (the storage given to the worker should be guarded by it too). None: everything.
   */
  policy?: DeploymentPolicy;
  /**
   * Refuses (throws E_NOT_ALLOWED) a run job whose trigger names a pipeline it is not a run of:
   * the pipelines of the worker's jobs folder (see pipelineRunCheck). None: a run naming a
   * pipeline is not checked against it (the worker has no jobs folder).
   */
  checkPipelineRun?: (runId: string, request: RunJobData['request']) => void;
  /** The deployment's bounds on sizes peers control (see LIMITS), applied to every run and segment job; DEFAULT_LIMITS when absent. */
  limits?: Limits;
  /** Run options a job does not set (this worker's MODEL_SERVICE_URL and config files). */
  runDefaults?: RunOptionsInput;
  /** Hears the scoring of segments: the worker's metrics, with `--metrics-port`. */
  observer?: ScoringObserver;
  /**
   * Queues this process also works on (the schedules queue's fired jobs): one job at a time
   * each, on the worker's own connection, and shut down with it.
   */
  alsoProcess?: AlsoProcessed[];
  /** Hears the runs this process starts and ends (webhooks, lineage; see RunListener). */
  listener?: RunListener;
  /**
   * The deployment's retention: how many finished run and segment jobs the worker keeps when it
   * finishes one, and how long (see keptJobs); the queues' defaults when absent.
   */
  retention?: RetentionSettings;
}

/** The worker's defaults: what its flags default to. */
export const DEFAULT_WORKER_OPTIONS: Pick<WorkerOptions, 'maxInFlight' | 'segments' | 'shutdownTimeoutMs' | 'lockDurationMs'> = {
  maxInFlight: 4,
  segments: 2,
  shutdownTimeoutMs: PROCESS_DEFAULTS.workerShutdownTimeoutMs,
  lockDurationMs: 30_000,
};
