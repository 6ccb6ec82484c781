import { excerpt, MESSAGE_BYTES } from './text-excerpt.js';

/**
 * The error catalogue: every stable code, declared once with what it means for each way it is
 * reported. `code` is what users and scripts match on. Throw sites name a code; its HTTP status,
 * exit code and retry meaning come from here, never from the site.
 */
interface ErrorSpec {
  /** The HTTP status an API answer carries (4xx: the caller must change something; 5xx: the server or a dependency). */
  status: number;
  /** What the CLI exits with: 2, fix the command or configuration; 1, the run failed. */
  exit: 1 | 2;
  /** Whether trying the same work again later may succeed; BullMQ fails a job at once when not. */
  retriable: boolean;
  /** What the user can do about it, in a few words (shown by the API's OpenAPI document and the docs). */
  hint: string;
}

export const ERROR_CATALOGUE = {
  E_USAGE: { status: 400, exit: 2, retriable: false, hint: 'a flag, option or setting is wrong: change the one named' },
  E_CONFIG: { status: 500, exit: 2, retriable: false, hint: 'a configuration file or environment variable is invalid: fix the one named' },
  E_NOT_ALLOWED: {
    status: 403,
    exit: 2,
    retriable: false,
    hint: 'the deployment policy (INPUT_ROOTS, OUTPUT_ROOTS, SERVICE_URLS) does not allow this location or service',
  },
  E_INPUT_NOT_FOUND: { status: 422, exit: 2, retriable: false, hint: 'the input location does not exist: check the path or key' },
  E_NOT_FOUND: { status: 404, exit: 1, retriable: false, hint: 'a file or object asked for does not exist' },
  E_INPUT: { status: 422, exit: 1, retriable: false, hint: 'the input file is malformed (encoding, quoting, empty): fix the file or the dialect options' },
  E_INPUT_CHANGED: { status: 409, exit: 1, retriable: false, hint: 'the input changed while the run read it: run again once it is stable' },
  E_OUTPUT: { status: 422, exit: 2, retriable: false, hint: 'the output location cannot be used: choose another --out' },
  E_STORAGE: { status: 503, exit: 1, retriable: true, hint: 'a storage operation failed for a reason that may pass: it is tried again' },
  E_STORAGE_REFUSED: {
    status: 422,
    exit: 2,
    retriable: false,
    hint: 'storage refused the operation and will again (access denied, no credentials, no bucket, no space): fix the location or the permissions',
  },
  E_DATABASE: {
    status: 503,
    exit: 1,
    retriable: true,
    hint: 'the PostgreSQL server failed for a reason that may pass (connection lost, shut down, overloaded, a deadlock): it is tried again',
  },
  E_DATABASE_REFUSED: {
    status: 422,
    exit: 2,
    retriable: false,
    hint: 'PostgreSQL refused the query or table and will again (no such table or column, permission denied, a bad query, a login refused): fix the one named',
  },
  E_REDIS_UNAVAILABLE: { status: 503, exit: 2, retriable: true, hint: 'Redis (REDIS_URL) did not answer: check the URL and that Redis runs' },
  E_RUN_EXISTS: { status: 409, exit: 2, retriable: false, hint: 'the run id is taken by a different or finished run: choose another --run-id' },
  E_RUN_STATE: {
    status: 409,
    exit: 2,
    retriable: false,
    hint: "a run folder's own files are missing, damaged, foreign or of a release this one cannot read: choose another run id",
  },
  E_RUN_NOT_FOUND: { status: 404, exit: 2, retriable: false, hint: 'no run on the queue has this id (never enqueued, or removed after its retention)' },
  E_RUN_LOST: {
    status: 410,
    exit: 1,
    retriable: false,
    hint: 'the run vanished from the queue while it was followed (Redis restarted without persistence): enqueue it again under its run id to resume it',
  },
  E_RUN_CONFLICT: { status: 409, exit: 2, retriable: false, hint: 'the run is not in a state that allows this: check its state first' },
  E_IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    exit: 2,
    retriable: false,
    hint: 'the Idempotency-Key was sent within 24 h with another submission: send a new key for a new submission',
  },
  E_IDEMPOTENCY_IN_PROGRESS: {
    status: 409,
    exit: 2,
    retriable: true,
    hint: 'another request with this Idempotency-Key is still being answered: send it again in a few seconds',
  },
  E_CANCELLED: { status: 409, exit: 1, retriable: false, hint: 'the run was cancelled: resume it to go on' },
  E_EXPIRED: {
    status: 409,
    exit: 1,
    retriable: false,
    hint: 'the run reached a cap (--max-requests, --max-rows or --deadline) and kept every row it scored: resume it with a higher cap, or none',
  },
  E_ERROR_RATE: { status: 422, exit: 1, retriable: false, hint: 'more rows were quarantined than --max-error-rate allows: see errors.jsonl' },
  E_ALIGNMENT: { status: 502, exit: 1, retriable: false, hint: 'answers did not line up with the rows sent, on every attempt' },
  E_COLUMNS: { status: 422, exit: 2, retriable: false, hint: "the input's columns do not fit the model" },
  E_SERVICE_RETRIABLE: { status: 503, exit: 1, retriable: true, hint: 'overload or network on one attempt: retried with backoff' },
  E_SERVICE_UNAVAILABLE: {
    status: 503,
    exit: 1,
    retriable: true,
    hint: 'overload or network on every attempt: the retries ran out; try later or lower --concurrency',
  },
  E_SERVICE_UNREACHABLE: { status: 502, exit: 2, retriable: true, hint: 'nothing answers at the service URL: check --service or MODEL_SERVICE_URL' },
  E_SERVICE_URL: { status: 502, exit: 2, retriable: false, hint: 'something answers at the service URL, but not a Model Query Service' },
  E_SERVICE_FATAL: { status: 502, exit: 1, retriable: false, hint: 'the service refused the request and will again' },
  E_MODEL_NOT_FOUND: { status: 422, exit: 2, retriable: false, hint: 'unknown project, model or version: check --model' },
  E_MODEL_NOT_READY: { status: 409, exit: 1, retriable: true, hint: 'the model is training or in error: try again once it is trained' },
  E_MODEL_CHANGED: { status: 409, exit: 1, retriable: false, hint: 'the model was retrained while the run scored' },
  E_DRIFT: {
    status: 409,
    exit: 1,
    retriable: false,
    hint: "the run's values moved past its --drift-fail from its baseline run: it is held, its outputs written; accept it (batch-scorer accept <runId> --out <prefix>) if the change is expected, else reject it",
  },
  E_WRONG_ENVELOPE: { status: 422, exit: 2, retriable: false, hint: 'the server expects the other body envelope: pass --envelope' },
  E_UNAUTHORIZED: { status: 401, exit: 2, retriable: false, hint: "the caller's credentials (API_TOKEN, the dashboard's login) are missing or refused" },
  E_SERVICE_UNAUTHORIZED: {
    status: 502,
    exit: 2,
    retriable: false,
    hint: 'the model service refused our credentials: check MODEL_SERVICE_TOKEN or SERVICE_TOKENS',
  },
  E_RATE_LIMITED: { status: 429, exit: 1, retriable: true, hint: 'too many failed attempts to authenticate from this client: wait as Retry-After says' },
  E_LIMIT: {
    status: 422,
    exit: 1,
    retriable: false,
    hint: 'a size passed a bound of the deployment (docs/limits.md): the message names the setting that raises it',
  },
  E_BAD_ROWS: { status: 422, exit: 1, retriable: false, hint: 'the engine failed on the rows of this request' },
  E_ABORTED: { status: 503, exit: 1, retriable: true, hint: 'the operation was cancelled (a signal, a shutdown): it may be done again' },
  E_INTERNAL: { status: 500, exit: 1, retriable: false, hint: 'a bug to report, with the log at LOG_LEVEL=debug' },
} as const satisfies Record<string, ErrorSpec>;

/** A stable error code (see ERROR_CATALOGUE). */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** What the catalogue says of a code. */
export function errorSpec(code: ErrorCode): ErrorSpec {
  return ERROR_CATALOGUE[code];
}

/**
 * An error with a stable code. Its message is bounded to MESSAGE_BYTES ("... N more bytes" ends
 * what was cut): a message quoting input (a 50 MB header line) would otherwise be as large in
 * every place errors go, from Redis to the log. Sites quoting a value bound it themselves, to
 * VALUE_BYTES, so that what comes after the value (what to do) is kept.
 */
export class BatchScorerError extends Error {
  readonly code: ErrorCode;
  /** From the catalogue: whether trying the same work again later may succeed. */
  readonly retriable: boolean;
  /** From the catalogue: what the CLI exits with. */
  readonly exitCode: 1 | 2;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown } = {}) {
    // Bounded before Error captures its stack, which repeats the message.
    super(excerpt(message, MESSAGE_BYTES), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = ERROR_CATALOGUE[code].retriable;
    this.exitCode = ERROR_CATALOGUE[code].exit;
  }
}

/** A flag, option or setting is wrong: the user must change the command or configuration. */
export class UsageError extends BatchScorerError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('E_USAGE', message, options);
  }
}

/** The input data is malformed; names the file and, where known, the row, line or byte. */
export class InputError extends BatchScorerError {
  constructor(message: string, code: 'E_INPUT' | 'E_INPUT_NOT_FOUND' | 'E_INPUT_CHANGED' = 'E_INPUT') {
    super(code, message);
  }
}

/**
 * Storage found no such file, object or bucket. Storage does not know whose file it was: the
 * pipeline turns this into E_INPUT_NOT_FOUND where the user's input is read, and E_RUN_STATE
 * where a run's own files are.
 */
export class NotFoundError extends BatchScorerError {
  constructor(message: string) {
    super('E_NOT_FOUND', message);
  }
}

/**
 * A run folder cannot be used as it is: a file of its `_work` area or its manifest is missing,
 * damaged, not a run file, or written by a release this one cannot read. Trying again will not
 * help; the user must choose another run id or repair the folder (exit 2).
 */
export class RunFolderError extends BatchScorerError {
  constructor(message: string, cause?: unknown) {
    super('E_RUN_STATE', message, { cause });
  }
}

/** Work was cancelled (a signal, a shutdown): nothing is wrong with it, so it may be done again. */
export class AbortedError extends BatchScorerError {
  constructor(message: string, cause?: unknown) {
    super('E_ABORTED', message, { cause });
  }
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR');
}

/** The stable code of any thrown value: its own, or E_INTERNAL for what is not a BatchScorerError. */
export function errorCode(err: unknown): ErrorCode {
  return err instanceof BatchScorerError ? err.code : 'E_INTERNAL';
}

/** The message of any thrown value, bounded to MESSAGE_BYTES, for places that must not throw while reporting. */
export function errorMessage(err: unknown): string {
  return excerpt(err instanceof Error ? err.message : String(err), MESSAGE_BYTES);
}
