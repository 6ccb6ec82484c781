import type { RunOptions } from '../config/index.js';
import type { Logger } from '../log.js';
import type { CallOptions, ModelRef, PickedRow, PredictOptions, RowsJson } from '../service/index.js';

/**
 * The model service as the scoring core uses it: describe a model, score rows. The core takes it
 * as it takes Storage, so that a run can score against two models and its planning, scoring and
 * assembly can be tested without an HTTP server. ServiceClient is the one for a Model Query
 * Service.
 *
 * Error contract: a failure is a ServiceError (service/service-error.ts), whose `kind` says what
 * the run does with it: `bad-rows` splits the batch and quarantines the rows the engine fails on;
 * `unavailable`, `not-found`, `unauthorized`, `not-ready`, `wrong-url`, `wrong-envelope` and
 * `fatal` end it. A predictor retries passing failures (overload, network, answers that do not
 * fit `check`) by its own policy before it gives up with `unavailable`. An answer past a bound
 * of the deployment (its bytes, its nesting, describe's bytes) fails the call with `E_LIMIT`
 * naming the setting, never retried. An aborted `signal` rejects with its reason; what the
 * caller's `beforeAttempt` throws is thrown as it is. Nothing else is thrown.
 */
export interface Predictor {
  /** The service as it may be shown in logs and manifests (no credentials). */
  readonly displayUrl: string;
  /** Describe's answer to this body (`{}` or `{"attribute": ...}`), as JSON. */
  describe(ref: ModelRef, body: object, options?: CallOptions): Promise<unknown>;
  /** Scores rows given as their JSON joined with commas; answers the rows as they came (the caller checks alignment). */
  predict(ref: ModelRef, rowsJson: RowsJson, options: RowsPredictOptions): Promise<Record<string, unknown>[]>;
  /** `predict`, reading only these members of each answer row, in this order (undefined where a row lacks one). */
  predictMembers(ref: ModelRef, rowsJson: RowsJson, members: readonly string[], options: RowsPredictOptions<PickedRow>): Promise<PickedRow[]>;
  /** Connections opened since the last call (each counted once), for the manifest's counts; 0 where there are none. */
  takeConnectionsOpened(): number;
}

/**
 * A predict call's options as the scoring core gives them: with the count of rows in `rowsJson`, which
 * a run's caps take at every attempt (see cappedPredictor). A service client need not read it.
 */
export type RowsPredictOptions<Row = Record<string, unknown>> = PredictOptions<Row> & { rows: number };

/** A predictor closed once its run ends (a pool of connections). */
export interface OwnPredictor extends Predictor {
  close(): Promise<void>;
}

/**
 * A run's own predictor: the service, time limit and retries its options ask for, `connections`
 * kept alive (as many as its requests in flight), logging to `log`. Built where the process is
 * wired (the commands), so the scoring core never builds an adapter itself.
 */
export type PredictorFactory = (options: RunOptions, connections: number, log: Logger) => OwnPredictor;
