import { EventEmitter, once } from 'node:events';
import { setImmediate as turn } from 'node:timers/promises';
import type { OwnPredictor, PredictorFactory } from '../../src/scoring/predictor.js';
import { predictBody, type CallOptions, type Envelope, type PredictOptions, type RowsJson } from '../../src/service/client.js';
import { parseJsonBody } from '../../src/service/json-body.js';
import { pickMembers, type PickedRow } from '../../src/service/json-members.js';
import { modelPathName, type ModelRef } from '../../src/service/model-ref.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../../src/service/retry-policy.js';
import { afterFailedAttempt, httpServiceError, ServiceError } from '../../src/service/service-error.js';
import { problem, type Answer } from '../../src/simulator/answer.js';
import { describeModel } from '../../src/simulator/describe.js';
import { predictAnswer, readPredictRows } from '../../src/simulator/predict.js';
import { isAnswer, lookupModel } from '../../src/simulator/server.js';

/** How the fake service behaves; by default as the simulator does with its default options. */
export interface FakeServiceOptions {
  /** The row id member echoed back (`none`: a server that echoes none); the reference server's by default. */
  rowIdMember?: string;
  /** The predict body envelope it accepts; the other gets the 500 the matching real server gives. */
  envelope?: Envelope;
  /** Answer describe `{}` with the info shape, as older servers do. */
  legacyDescribe?: boolean;
  /** Predict attempts answered 503 (an overload), one after the other: retried by the run's --retries. */
  overloads?: number;
  /** Predict attempts answered before the overloads begin (0: from the first, the planner's probe). */
  overloadsAfter?: number;
  /** Hears each predict attempt as it reaches the engine, before it is answered (a test stops a run from here). */
  onPredict?: (attempt: { rows: number; number: number }) => void;
  /**
   * A retry waits until the engine has had this many predict attempts, as a real backoff lets the
   * batches after it go first; without it a retry goes at once.
   */
  retryAfterPredicts?: number;
}

/** What the fake service was asked, as the simulator's stats count it. */
export interface FakeServiceStats {
  describeRequests: number;
  /** Predict attempts, overloads included. */
  predictRequests: number;
  /** Rows of the predict attempts the engine answered. */
  predictRows: number;
  overloads: number;
  /** Predictors the factory made, and how many of them were closed. */
  made: number;
  closed: number;
}

/**
 * The Model Query Service in this process: describe and predict answered by the simulator's own
 * handlers (models.ts formulas, the engine failing on rows holding `__engine_error__`, the row id
 * echoed), classified into ServiceErrors as ServiceClient classifies the server's answers, and
 * retried as it retries them (without waiting). No HTTP server, no sockets: for fast tests of a run.
 */
export function fakeService(options: FakeServiceOptions = {}): { predictorFor: PredictorFactory; stats: FakeServiceStats } {
  const stats: FakeServiceStats = { describeRequests: 0, predictRequests: 0, predictRows: 0, overloads: 0, made: 0, closed: 0 };
  const state: FakeState = { overloadsLeft: options.overloads ?? 0, predicted: new EventEmitter() };
  const predictorFor: PredictorFactory = (runOptions) => {
    stats.made++;
    return new FakePredictor({ ...DEFAULT_RETRY_POLICY, retries: runOptions.retries }, options, stats, state);
  };
  return { predictorFor, stats };
}

/** What the predictors of one fake service share: the overloads left, and an event per predict attempt (its number). */
interface FakeState {
  overloadsLeft: number;
  predicted: EventEmitter;
}

class FakePredictor implements OwnPredictor {
  readonly displayUrl = 'fake://model-service';
  private closed = false;

  constructor(
    private readonly policy: RetryPolicy,
    private readonly options: FakeServiceOptions,
    private readonly stats: FakeServiceStats,
    private readonly state: FakeState,
  ) {}

  async describe(ref: ModelRef, body: object, options: CallOptions = {}): Promise<unknown> {
    await turn();
    options.signal?.throwIfAborted();
    this.stats.describeRequests++;
    const found = lookupModel(ref.project, modelPathName(ref), false);
    const answer = isAnswer(found) ? found : describeModel(found.model, found.version, body, this.options.legacyDescribe ?? false);
    if (answer.status !== 200) throw httpServiceError(`describe ${modelPathName(ref)}`, answer.status, answer.body, this.policy);
    return JSON.parse(answer.body) as unknown;
  }

  predict(ref: ModelRef, rowsJson: RowsJson, options: PredictOptions): Promise<Record<string, unknown>[]> {
    return this.predictAnswer(ref, rowsJson, options, (body) => parseJsonBody(body) as Record<string, unknown>[]);
  }

  predictMembers(ref: ModelRef, rowsJson: RowsJson, members: readonly string[], options: PredictOptions<PickedRow>): Promise<PickedRow[]> {
    return this.predictAnswer(ref, rowsJson, options, (body) => pickMembers(body, members));
  }

  takeConnectionsOpened(): number {
    return 0; // no connections
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stats.closed++;
    await turn();
  }

  /** One predict call: attempts until the engine answers, a failure that is not passing, or the retries run out. */
  private async predictAnswer<Row>(ref: ModelRef, rowsJson: RowsJson, options: PredictOptions<Row>, read: (body: Buffer) => Row[]): Promise<Row[]> {
    const what = `predict ${modelPathName(ref)}`;
    // The bytes ServiceClient sends, read as the server reads them.
    const body = JSON.parse(predictBody(rowsJson, options).toString('utf8')) as unknown;
    let engineFailures = options.retryEngineFailure === false ? 1 : 0;
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        // As ServiceClient does, the caller's gate is asked inside the slot, before anything is sent.
        const exchange = async () => {
          await options.beforeAttempt?.();
          return this.engine(ref, body, options.signal);
        };
        const answer = await (options.slot ? options.slot(exchange) : exchange());
        if (answer.status !== 200) throw httpServiceError(what, answer.status, answer.body, this.policy, undefined, options.envelope);
        const rows = read(Buffer.from(answer.body));
        options.check?.(rows);
        options.onAttempt?.({ ms: performance.now() - started });
        return rows;
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        options.onAttempt?.({ ms: performance.now() - started, error: err });
        // As ServiceClient decides: an engine failure is tried once more (it may be passing) before the caller isolates the rows.
        const next = afterFailedAttempt(err, attempt, this.policy.retries, err.kind === 'bad-rows' ? engineFailures++ : engineFailures);
        if (next !== 'again') throw next;
        options.onRetry?.({ attempt, delayMs: 0, error: err });
        const after = this.options.retryAfterPredicts;
        if (after !== undefined && this.stats.predictRequests < after) await once(this.state.predicted, String(after), { signal: options.signal });
      }
    }
  }

  /** The service's answer to one predict body, after a turn of the event loop as a request would take. */
  private async engine(ref: ModelRef, body: unknown, signal: AbortSignal | undefined): Promise<Answer> {
    await turn();
    signal?.throwIfAborted();
    const number = ++this.stats.predictRequests;
    this.state.predicted.emit(String(number));
    const rows = readPredictRows(body, this.options.envelope ?? 'data');
    this.options.onPredict?.({ rows: Array.isArray(rows) ? rows.length : 0, number });
    signal?.throwIfAborted();
    if (number > (this.options.overloadsAfter ?? 0) && this.state.overloadsLeft > 0) {
      this.state.overloadsLeft--;
      this.stats.overloads++;
      return problem(503, 'Service Unavailable', 'simulated overload');
    }
    if (isAnswer(rows)) return rows;
    const found = lookupModel(ref.project, modelPathName(ref), false);
    if (isAnswer(found)) return found;
    const answer = predictAnswer(found.model, found.version, rows, this.options.rowIdMember ?? '__mindsdb_row_id');
    if (answer.status === 200) this.stats.predictRows += rows.length;
    return answer;
  }
}
