import { BatchScorerError, type ErrorCode } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import type { Envelope } from './client.js';
import type { RetryPolicy } from './retry-policy.js';

/** What a failed service call means for the caller, by how the reference server answers failures. */
export type ServiceErrorKind =
  | 'retriable' // overload or network: try again after a backoff
  | 'unavailable' // overload or network on every attempt: the retries ran out
  | 'unreachable' // nothing answers at the base URL (refused, unknown host): the address is wrong
  | 'wrong-url' // something answers at the base URL, but not the service's API
  | 'bad-answer' // an answer that does not fit the request (rows missing or extra): retried like overload
  | 'not-ready' // the model is training or failed training
  | 'wrong-envelope' // the server wants the other body envelope
  | 'bad-rows' // the engine failed on these rows: retry once, then bisect
  | 'not-found' // project, model or version unknown
  | 'unauthorized'
  | 'fatal'; // anything else that will fail again

const CODES: Record<ServiceErrorKind, ErrorCode> = {
  retriable: 'E_SERVICE_RETRIABLE',
  unavailable: 'E_SERVICE_UNAVAILABLE',
  unreachable: 'E_SERVICE_UNREACHABLE',
  'wrong-url': 'E_SERVICE_URL',
  'bad-answer': 'E_ALIGNMENT',
  'not-ready': 'E_MODEL_NOT_READY',
  'wrong-envelope': 'E_WRONG_ENVELOPE',
  'bad-rows': 'E_BAD_ROWS',
  'not-found': 'E_MODEL_NOT_FOUND',
  unauthorized: 'E_SERVICE_UNAUTHORIZED',
  fatal: 'E_SERVICE_FATAL',
};

/** Kinds the client tries again within its retries (a bad answer is a fault before it is a verdict). */
export const RETRIED_KINDS: readonly ServiceErrorKind[] = ['retriable', 'bad-answer'];

/**
 * What a call's failed attempt number `attempt` leads to: `again` for the kinds retried (and an
 * engine failure on the rows the first time, which may be a passing fault of the engine), within
 * `retries`; otherwise the error the call ends with (`unavailable` once the retries of a retried
 * kind ran out). `engineFailures` counts the call's engine failures before this one.
 */
export function afterFailedAttempt(err: ServiceError, attempt: number, retries: number, engineFailures: number): 'again' | ServiceError {
  const retried = RETRIED_KINDS.includes(err.kind);
  if (!retried && !(err.kind === 'bad-rows' && engineFailures < 1)) return err;
  if (attempt > retries) return retried ? err.exhausted(attempt) : err;
  return 'again';
}

/**
 * A failed call to the Model Query Service, with the server's title and detail when it sent them,
 * each bounded to VALUE_BYTES: they go into errors.jsonl for every row of a failed request, and a
 * server may quote the whole request back.
 */
export class ServiceError extends BatchScorerError {
  readonly kind: ServiceErrorKind;
  readonly status?: number;
  readonly title?: string;
  readonly detail?: string;
  /** Milliseconds the server asked us to wait (Retry-After). */
  readonly retryAfterMs?: number;
  /**
   * The service is overloaded (429, 503, 504, no answer in time, a reset connection), as opposed
   * to failing: what `--concurrency auto` backs off on.
   */
  readonly overload: boolean;

  constructor(
    kind: ServiceErrorKind,
    message: string,
    facts: { status?: number; title?: string; detail?: string; retryAfterMs?: number; overload?: boolean; cause?: unknown } = {},
  ) {
    // Retry meaning and exit code are the code's (errors.ts): not-ready, unavailable and unreachable
    // are retried at the queue level; a wrong address, envelope, model or token is exit code 2.
    super(CODES[kind], message, { cause: facts.cause });
    this.kind = kind;
    this.status = facts.status;
    this.title = facts.title === undefined ? undefined : excerpt(facts.title);
    this.detail = facts.detail === undefined ? undefined : excerpt(facts.detail);
    this.retryAfterMs = facts.retryAfterMs;
    this.overload = facts.overload ?? (facts.status === 429 || facts.status === 503 || facts.status === 504);
  }

  /**
   * This error as reported once the retries ran out: a passing fault that never passed is no longer
   * "retriable" to whoever reads the message; a bad answer stays what it is, with the count of tries.
   */
  exhausted(attempts: number): ServiceError {
    const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
    const kind = this.kind === 'retriable' ? 'unavailable' : this.kind;
    const message =
      this.kind === 'bad-answer'
        ? `${this.message} (on each of ${tries})`
        : `${this.message} (gave up after ${tries}; raise --retries or --timeout, or lower --concurrency)`;
    return new ServiceError(kind, message, {
      status: this.status,
      title: this.title,
      detail: this.detail,
      retryAfterMs: this.retryAfterMs,
      overload: this.overload,
      cause: this,
    });
  }
}

/** An error body as the reference server writes it; proxies may send HTML instead. */
export interface ProblemBody {
  title?: string;
  detail?: string;
  message?: string;
}

/**
 * Reads an error body's title, detail and message, the detail and message without the Python
 * traceback a server may append to them (see withoutTraceback).
 */
export function parseProblem(text: string): ProblemBody {
  try {
    const body = JSON.parse(text) as unknown;
    if (body && typeof body === 'object' && !Array.isArray(body)) {
      const b = body as Record<string, unknown>;
      const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? undefined : JSON.stringify(v));
      const said = (v: unknown) => {
        const text = str(v);
        return text === undefined ? undefined : withoutTraceback(text);
      };
      return { title: str(b.title), detail: said(b.detail), message: said(b.message) };
    }
  } catch {
    // Not JSON (a proxy's HTML page): the status alone must carry the meaning.
  }
  return {};
}

/** Where a Python traceback starts (a chained one holds several: the first is where it starts). */
const TRACEBACK = 'Traceback (most recent call last):';

/**
 * A server's error text without the Python traceback it carries: MindsDB's engine failures append
 * one to the error's own line (`[engine/model]: ValueError: row 3: ...`), about 2 KB of the
 * server's files and frames, in the detail and again in the message. Those are for whoever runs
 * the server (its log has them); kept, they would be most of each quarantined row's reason in
 * errors.jsonl and crowd the line users read out of messages.
 * What precedes the traceback is kept, trimmed; a text that starts with one keeps its last line,
 * the exception it ended in. A text without one is answered as it is.
 */
export function withoutTraceback(text: string): string {
  const at = text.indexOf(TRACEBACK);
  if (at < 0) return text;
  const before = text.slice(0, at).trim();
  if (before !== '') return before;
  const lines = text
    .slice(at)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return lines[lines.length - 1];
}

/** Classifies an HTTP error answer by status and title, as the reference server and proxies in front of it answer. */
export function classifyHttpError(status: number, problem: ProblemBody, policy: RetryPolicy): ServiceErrorKind {
  const title = problem.title ?? '';
  const text = `${title} ${problem.detail ?? ''} ${problem.message ?? ''}`;
  if (status === 401 || status === 403) return 'unauthorized';
  // The service's own 404s name what is missing; any other 404 (a proxy's, a web server's) means the
  // base URL does not lead to the service's API.
  if (status === 404) return /project not found|model not found/i.test(text) ? 'not-found' : 'wrong-url';
  if (status === 500) {
    if (title === 'KeyError' || title === 'TypeError') return 'wrong-envelope';
    if (/creation not completed|is training|not ready/i.test(text)) return 'not-ready';
    if (/obsolete|RETRAIN/.test(text)) return 'fatal';
    if (title === 'MLEngineException') return 'bad-rows';
  }
  if (policy.statuses.includes(status)) return 'retriable';
  return 'fatal';
}

const HINTS: Partial<Record<ServiceErrorKind, string>> = {
  'wrong-envelope': 'the server expects the other body envelope: try --envelope array (the document as written) or --envelope data (the reference server)',
  'not-ready': 'the model is not ready (training or failed): wait for training to finish, or check its status with `batch-scorer describe`',
  'not-found': 'check the project and model names, and the version after the dot',
  'wrong-url': 'this URL does not look like a Model Query Service: check --service and its path prefix (e.g. /v1)',
  unauthorized: 'set MODEL_SERVICE_TOKEN (the service of MODEL_SERVICE_URL) or a SERVICE_TOKENS entry (another service) to a valid token',
};

/** The flag that sends each envelope, and the body it makes. */
const ENVELOPE_FLAGS: Record<Envelope, string> = {
  data: '--envelope data, the body {"data": [...]} as MindsDB reads it',
  array: '--envelope array, the body a bare array [...]',
};

/**
 * The message users see: what we called, what the server said, and what to do about it.
 * `envelope`: the one a predict request was sent in, so that a wrong one names the other.
 */
export function describeHttpError(what: string, status: number, problem: ProblemBody, kind: ServiceErrorKind, envelope?: Envelope): string {
  const said = excerpt([problem.title, problem.detail ?? problem.message].filter(Boolean).join(': '));
  const hint =
    kind === 'wrong-envelope' && envelope !== undefined
      ? `the server expects the other body envelope: pass ${ENVELOPE_FLAGS[envelope === 'data' ? 'array' : 'data']}`
      : HINTS[kind];
  return `${what}: HTTP ${status}${said ? ` ${said}` : ''}${hint ? ` (${hint})` : ''}`;
}

/**
 * The ServiceError of an HTTP error answer (`what`: the call, as messages name it), classified as
 * the reference server and proxies in front of it answer failures. `envelope`: a predict
 * request's (describe sends none).
 */
export function httpServiceError(what: string, status: number, body: string, policy: RetryPolicy, retryAfterMs?: number, envelope?: Envelope): ServiceError {
  const problem = parseProblem(body);
  const kind = classifyHttpError(status, problem, policy);
  return new ServiceError(kind, describeHttpError(what, status, problem, kind, envelope), {
    status,
    title: problem.title,
    detail: problem.detail ?? problem.message,
    retryAfterMs,
  });
}
