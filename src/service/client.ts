import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { AbortedError, isAbortError } from '../errors.js';
import { NestedTooDeep, textNestedDeeperThan } from '../formats/index.js';
import { redactUrl, silentLogger, type Logger } from '../log.js';
import { AnswerBuffers, predictAllowance, readBounded, type Allowance, type AnswerBounds } from './answer-bounds.js';
import { parseJsonBody } from './json-body.js';
import { Agent, buildConnector, request, type UndiciAgent, type UndiciConnector } from './undici-parts.js';
import { pickMembers, type PickedRow } from './json-members.js';
import { modelPathName, type ModelRef } from './model-ref.js';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelayMs, type RetryPolicy } from './retry-policy.js';
import { afterFailedAttempt, httpServiceError, ServiceError } from './service-error.js';

/**
 * A whole predict body its caller built in the envelope `predictEnvelope` gives: sent as it is.
 * A batch of a thousand rows is a quarter of a megabyte; wrapped by `predictBody`, each request
 * was that much copied into a new buffer once more.
 */
export class EnvelopedRows {
  constructor(readonly body: Buffer) {}
}

/**
 * Request rows: their JSON texts (UTF-8 bytes, or a string) joined with commas, as the body's array
 * holds them; or a body already in its envelope.
 */
export type RowsJson = Buffer | string | EnvelopedRows;

/** One call to the service: describe (a GET with a JSON body) or predict. */
interface ServiceCall {
  op: 'describe' | 'predict';
  ref: ModelRef;
  /** JSON text, or its UTF-8 bytes. */
  body: string | Buffer;
  /** The envelope a predict body is in (describe has none). */
  envelope?: Envelope;
}

/** How predict bodies are wrapped: `data` is the reference server's `{"data": [...]}`, `array` the document's bare array. */
export type Envelope = 'data' | 'array';

export interface ServiceClientOptions {
  /** Base URL, possibly with a path prefix (`https://gateway.example/v1`); `/api/projects/...` is appended. */
  baseUrl: string;
  /** Bearer token sent as `Authorization`; never logged. */
  token?: string;
  /** Per-request time limit in ms, from sending to the last byte of the answer. */
  timeoutMs: number;
  retry?: RetryPolicy;
  /** Keep-alive connections in the pool; set it to the concurrency so no request waits for a socket. */
  connections?: number;
  /** How much of its answers is read: past a bound, a call fails with the bound's error, never retried. */
  answers: AnswerBounds;
  logger?: Logger;
}

/** Called before each retry, so callers can count retries and report them. */
export type RetryListener = (info: { attempt: number; delayMs: number; error: ServiceError }) => void;

/** Called after each attempt with its own duration (not counting waits between attempts). */
export type AttemptListener = (info: { ms: number; error?: ServiceError }) => void;

export interface CallOptions {
  signal?: AbortSignal;
  onRetry?: RetryListener;
  onAttempt?: AttemptListener;
  /** Where this call's retries are logged: the caller's child logger, carrying its run and segment. */
  log?: Logger;
  /**
   * The first call to a service a user named (describe at a run's start): a connection nothing
   * answers is the address being wrong, so it fails at once (`unreachable`) instead of retrying.
   */
  firstContact?: boolean;
  /**
   * Whether an engine failure (`bad-rows`) is tried once more before it is thrown (default true).
   * False for part of a batch that already failed on the engine twice: the caller splits it at
   * once, since an engine refusing the same rows again is the rule, not a passing fault.
   */
  retryEngineFailure?: boolean;
  /**
   * Wraps each attempt's exchange with the service (sending the request, receiving the answer's
   * bytes), such as a request slot: it is held while the service works, not while the answer is
   * parsed or a retry waits, so the next request goes out as soon as an answer is in.
   */
  slot?: <T>(exchange: () => Promise<T>) => Promise<T>;
  /**
   * Called before each attempt is sent, the first and every retry, inside its `slot`: what it
   * throws fails the call as it is, without sending (a caller's cap on requests refusing one
   * more, say).
   */
  beforeAttempt?: () => Promise<void>;
}

/** How predict answers are read: whole objects (`predict`), or the members asked for (`predictMembers`). */
export interface PredictOptions<Row = Record<string, unknown>> extends CallOptions {
  envelope: Envelope;
  /** Passed to the engine as the body's `params` (data envelope only: the bare array has no room for them). */
  params?: Record<string, unknown>;
  /**
   * Checks each answer before it is returned; a ServiceError it throws is that attempt's failure,
   * retried by its kind (a `bad-answer`, such as a row missing, is tried again like an overload).
   */
  check?: (answer: Row[]) => void;
}

/**
 * The Model Query Service client: predict and describe over a keep-alive pool, with a time limit
 * per request, retries by `RetryPolicy`, and errors classified as `ServiceError`.
 */
export class ServiceClient {
  private readonly base: string;
  private readonly agent: UndiciAgent;
  /**
   * Describe's own pool. Describe is a GET with a body; after one, undici (7.x) opened a new
   * connection for every later request of its pool instead of reusing one, so a run paid a TCP
   * handshake per predict. Kept apart, predicts reuse their connections (pinned by
   * test/unit/undici-behaviour.test.ts).
   */
  private readonly describeAgent: UndiciAgent;
  private readonly policy: RetryPolicy;
  private readonly log: Logger;
  private closed = false;
  /** Where answers are joined; four kept: answers are read one at a time, a few waiting at most. */
  private readonly answerBuffers = new AnswerBuffers(4);
  /** Connections opened so far, and how many of them `takeConnectionsOpened` has handed out. */
  private opened = 0;
  private taken = 0;

  constructor(private readonly options: ServiceClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.policy = options.retry ?? DEFAULT_RETRY_POLICY;
    this.log = options.logger ?? silentLogger;
    // Every new socket passes through this connector, so that keep-alive reuse can be proven (counted in manifests).
    const connector = buildConnector({});
    const connect: UndiciConnector.connector = (opts, callback) => {
      this.opened++;
      connector(opts, callback);
    };
    this.agent = new Agent({ connections: options.connections ?? 16, keepAliveTimeout: 30_000, connect });
    this.describeAgent = new Agent({ connections: 1, keepAliveTimeout: 30_000, connect });
  }

  /**
   * Connections opened to the service since the last call: each is handed out once, so a process
   * scoring several segments on one pool counts every connection in exactly one of them.
   */
  takeConnectionsOpened(): number {
    const fresh = this.opened - this.taken;
    this.taken = this.opened;
    return fresh;
  }

  /**
   * Scores rows given as their JSON joined with commas (callers encode each row once, and size
   * batches by it); answers the server's rows as they came: the caller checks alignment.
   */
  predict(ref: ModelRef, rowsJson: RowsJson, options: PredictOptions): Promise<Record<string, unknown>[]> {
    return this.predictAnswer(ref, rowsJson, options, (body) => this.parseWithin(body));
  }

  /**
   * `predict`, reading only these members of each answer row, in this order (undefined where a
   * row lacks one): a run writes a few members of answers that echo every input, and building
   * the whole objects was much of its CPU (see pickMembers).
   */
  predictMembers(ref: ModelRef, rowsJson: RowsJson, members: readonly string[], options: PredictOptions<PickedRow>): Promise<PickedRow[]> {
    // Anything but an array is read whole, so that it is refused as predict refuses it. An array's
    // depth is bounded by pickMembers as it steps over the values: no second pass over the answer.
    const { maxAnswerDepth } = this.options.answers;
    return this.predictAnswer(ref, rowsJson, options, (body) => (startsArray(body) ? pickMembers(body, members, maxAnswerDepth) : this.parseWithin(body)));
  }

  /** A whole answer parsed, once its depth is known to be within MAX_ANSWER_DEPTH (else NestedTooDeep): no parse or walk meets a value too deep. */
  private parseWithin(body: Buffer): unknown {
    const { maxAnswerDepth } = this.options.answers;
    if (textNestedDeeperThan(body, maxAnswerDepth)) throw new NestedTooDeep(maxAnswerDepth);
    return parseJsonBody(body);
  }

  private async predictAnswer<Row>(ref: ModelRef, rowsJson: RowsJson, options: PredictOptions<Row>, read: (body: Buffer) => unknown): Promise<Row[]> {
    const body = predictBody(rowsJson, options);
    const rows = await this.call({ op: 'predict', ref, body, envelope: options.envelope }, options, read, (answer) => {
      if (!Array.isArray(answer)) {
        throw new ServiceError('fatal', `predict ${this.where(ref, 'predict')}: expected a JSON array of predictions, got ${typeof answer}`);
      }
      options.check?.(answer as Row[]);
    });
    return rows as Row[];
  }

  /** Describe with a JSON body on GET, as the reference server requires (`{}` or `{"attribute": ...}`). */
  describe(ref: ModelRef, body: object, options: CallOptions = {}): Promise<unknown> {
    return this.call({ op: 'describe', ref, body: JSON.stringify(body) }, options, (answer) => this.parseWithin(answer));
  }

  /** The service as it may be shown in logs and manifests. */
  get displayUrl(): string {
    return redactUrl(this.base);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.agent.close(), this.describeAgent.close()]);
  }

  private where(ref: ModelRef, op: string): string {
    return `${this.displayUrl}/api/projects/${ref.project}/models/${modelPathName(ref)}/${op}`;
  }

  private async call(call: ServiceCall, options: CallOptions, read: (body: Buffer) => unknown, check?: (answer: unknown) => void): Promise<unknown> {
    const { op } = call;
    let engineFailures = options.retryEngineFailure === false ? 1 : 0;
    const log = options.log ?? this.log;
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const answer = await this.once(call, options, read);
        check?.(answer);
        options.onAttempt?.({ ms: performance.now() - started });
        return answer;
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        options.onAttempt?.({ ms: performance.now() - started, error: err });
        const next = afterFailedAttempt(err, attempt, this.policy.retries, err.kind === 'bad-rows' ? engineFailures++ : engineFailures);
        if (next !== 'again') throw next;
        const delayMs = retryDelayMs(this.policy, attempt, err.retryAfterMs);
        options.onRetry?.({ attempt, delayMs, error: err });
        log.debug({ op, attempt, delayMs, status: err.status, err }, 'retrying service call');
        await sleep(delayMs, undefined, { signal: options.signal }).catch((cause: unknown) => {
          throw new AbortedError(`${op}: cancelled while waiting to retry`, cause);
        });
      }
    }
  }

  private async once(call: ServiceCall, options: CallOptions, read: (body: Buffer) => unknown): Promise<unknown> {
    const what = `${call.op} ${this.where(call.ref, call.op)}`;
    const allowance: Allowance =
      call.op === 'predict'
        ? predictAllowance(Buffer.byteLength(call.body), this.options.answers)
        : { bytes: this.options.answers.maxDescribeBytes, bound: 'describeBytes' };
    const { beforeAttempt } = options;
    const exchange = beforeAttempt
      ? async () => {
          await beforeAttempt();
          return this.exchange(call, options, what, allowance.bytes);
        }
      : () => this.exchange(call, options, what, allowance.bytes);
    const exchanged = await (options.slot ? options.slot(exchange) : exchange());
    // The answer is read once the requests waiting to be written are. The slot just freed sent the
    // next request, which undici (7.30+) writes to a kept-alive socket only from an immediate of
    // its own. Answers come in bunches: one immediate would read this answer before the request
    // that a later answer of the same bunch freed is written. A second immediate, queued while the
    // first runs, waits for the loop's next turn, after every immediate queued in this one (by
    // hand, latency-bound: 95.2% of the ideal rate with one, 96.0% with two). Pinned by
    // test/unit/undici-behaviour.test.ts.
    await setImmediate();
    await setImmediate();
    try {
      return this.readAnswer(call, what, allowance, exchanged, read);
    } finally {
      // Read into values of their own (strings are copied out): its buffer serves the next answer.
      if (exchanged.answer !== undefined) this.answerBuffers.give(exchanged.answer);
    }
  }

  /** What an exchange's answer says: `read` of it, or the error its status and body mean. */
  private readAnswer(call: ServiceCall, what: string, allowance: Allowance, exchanged: Exchanged, read: (body: Buffer) => unknown): unknown {
    const { status, answer, retryAfter, declared } = exchanged;
    const { maxAnswerDepth, limitError } = this.options.answers;
    if (status >= 200 && status < 300) {
      if (answer === undefined) throw this.tooLarge(call, what, allowance, declared);
      try {
        return read(answer);
      } catch (err) {
        if (err instanceof NestedTooDeep) throw limitError('answerDepth', maxAnswerDepth, `${what}: an answer nested more than ${maxAnswerDepth} levels deep`);
        throw new ServiceError('retriable', `${what}: HTTP ${status} with a body that is not JSON (${answer.toString('utf8', 0, 80)})`, { status });
      }
    }
    // An error answer past the allowance, or too deep to read, is not read: its status alone says what it means.
    const readable = answer !== undefined && !textNestedDeeperThan(answer, maxAnswerDepth);
    throw httpServiceError(what, status, readable ? answer.toString('utf8') : '', this.policy, parseRetryAfter(retryAfter), call.envelope);
  }

  /** The error of an answer past its allowance, naming the bound to raise (never quoting the answer). */
  private tooLarge(call: ServiceCall, what: string, allowance: Allowance, declared: number | undefined): Error {
    const { answers } = this.options;
    const n = (x: number) => x.toLocaleString('en-US');
    const size = declared === undefined ? `an answer of more than ${n(allowance.bytes)} bytes` : `an answer of ${n(declared)} bytes (its Content-Length)`;
    const value = { answerBytes: answers.maxAnswerBytes, answerRatio: answers.maxAnswerRatio, describeBytes: answers.maxDescribeBytes }[allowance.bound];
    const request = allowance.bound === 'answerRatio' ? ` to a request of ${n(Buffer.byteLength(call.body))} bytes` : '';
    return answers.limitError(allowance.bound, value, `${what}: ${size}${request}`);
  }

  /**
   * One request and its answer's bytes, at most `allowed` of them (`answer` undefined past it, with
   * the `declared` length when the answer's header said so); the time limit runs from sending (not
   * from waiting for a slot).
   */
  private async exchange({ op, ref, body }: ServiceCall, options: CallOptions, what: string, allowed: number): Promise<Exchanged> {
    const { signal } = options;
    const path = `/api/projects/${encodeURIComponent(ref.project)}/models/${encodeURIComponent(modelPathName(ref))}/${op}`;
    // One controller per request, fed by the caller's signal and a timer, both let go when the
    // request ends: AbortSignal.any and AbortSignal.timeout cost more per request, and on Node 20
    // any() hangs its listeners on the sources behind a composed signal, past Node's leak warning.
    const combined = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      combined.abort(new DOMException(`no answer within ${this.options.timeoutMs} ms`, 'TimeoutError'));
    }, this.options.timeoutMs);
    const cancel = () => combined.abort(signal?.reason);
    if (signal?.aborted) cancel();
    else signal?.addEventListener('abort', cancel, { once: true });
    try {
      // As undici.request(url, { dispatcher }) calls it.
      const url = new URL(this.base + path);
      const res = await request.call(op === 'describe' ? this.describeAgent : this.agent, {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: op === 'describe' ? 'GET' : 'POST',
        body,
        signal: combined.signal,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
        },
      });
      const status = res.statusCode;
      const length = Number(res.headers['content-length']);
      const declared = status >= 200 && status < 300 && length > allowed ? length : undefined;
      return { status, retryAfter: res.headers['retry-after'], answer: await readBounded(res.body, allowed, declared, this.answerBuffers), declared };
    } catch (err) {
      if (signal?.aborted) throw new AbortedError(`${what}: cancelled`, err);
      if (timedOut || isAbortError(err)) {
        throw new ServiceError('retriable', `${what}: no answer within ${this.options.timeoutMs} ms (raise --timeout if the model is slow)`, {
          overload: true,
          cause: err,
        });
      }
      const code = (err as { code?: string }).code ?? 'unknown';
      if (options.firstContact && this.policy.unreachableCodes.includes(code)) {
        throw new ServiceError(
          'unreachable',
          `nothing answers at ${this.displayUrl} (${code}): check --service (or MODEL_SERVICE_URL) and that the service runs`,
          { cause: err },
        );
      }
      const kind = this.policy.errorCodes.includes(code) ? 'retriable' : 'fatal';
      // A reset or a dropped socket is how an overloaded server or proxy sheds load; a refused connection is not.
      const overload = code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
      throw new ServiceError(kind, `${what}: ${code} ${(err as Error).message}`, { overload, cause: err });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', cancel);
    }
  }
}

/** What an exchange with the service got: its status, and its answer's bytes unless they passed their allowance. */
interface Exchanged {
  status: number;
  answer: Buffer | undefined;
  /** The length the answer declared, when it alone passed the allowance. */
  declared?: number;
  retryAfter: string | string[] | undefined;
}

/** What a predict body holds before its rows and after them: the envelope, with the params in the data envelope. */
export function predictEnvelope(options: Pick<PredictOptions, 'envelope' | 'params'>): { head: Buffer; tail: Buffer } {
  const params = options.params && Object.keys(options.params).length > 0 ? `,"params":${JSON.stringify(options.params)}` : '';
  const [head, tail] = options.envelope === 'data' ? ['{"data":[', `]${params}}`] : ['[', ']'];
  return { head: Buffer.from(head), tail: Buffer.from(tail) };
}

/** A predict request's body: the rows inside the envelope (see predictEnvelope). */
export function predictBody(rowsJson: RowsJson, options: Pick<PredictOptions, 'envelope' | 'params'>): Buffer {
  if (rowsJson instanceof EnvelopedRows) return rowsJson.body;
  const { head, tail } = predictEnvelope(options);
  return Buffer.concat([head, typeof rowsJson === 'string' ? Buffer.from(rowsJson) : rowsJson, tail]);
}

/** Whether a body's first character past white space opens an array. */
function startsArray(body: Buffer): boolean {
  for (const byte of body) if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return byte === 0x5b;
  return false;
}
