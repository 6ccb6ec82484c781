/**
 * Named errors with stable codes. `code` is what users and scripts match on; `retriable` says
 * whether trying the same work again later may succeed (BullMQ's UnrecoverableError is derived
 * from it in queue mode); `exitCode` is what the CLI exits with (2: fix the command or
 * configuration, 1: the run failed).
 */
export type ErrorCode =
  | 'E_USAGE' // bad flag, option or setting
  | 'E_CONFIG' // a configuration file or environment variable is invalid
  | 'E_INPUT_NOT_FOUND' // the input location does not exist
  | 'E_NOT_FOUND' // a file or object storage was asked for does not exist (the caller says whose it is)
  | 'E_INPUT' // the input file is malformed (encoding, quoting, empty)
  | 'E_INPUT_CHANGED' // the input changed while the run was reading it
  | 'E_OUTPUT' // the output location cannot be written (not a folder, no permission, no bucket)
  | 'E_STORAGE' // a storage operation failed for a reason that may pass
  | 'E_REDIS_UNAVAILABLE' // Redis (REDIS_URL) did not answer: check the URL and that Redis runs
  | 'E_RUN_EXISTS' // the run id is taken by a different or finished run
  | 'E_RUN_STATE' // a run folder's own files are missing, damaged, foreign or of a release this one cannot read
  | 'E_RUN_NOT_FOUND' // no run on the queue has this id (never enqueued, or removed after its retention)
  | 'E_RUN_CONFLICT' // the run is not in a state that allows this (cancelling a finished run, resuming a running one)
  | 'E_CANCELLED' // the run was cancelled (DELETE /runs/:id, `batch-scorer cancel`): it may be resumed
  | 'E_ERROR_RATE' // more rows were quarantined than --max-error-rate allows
  | 'E_ALIGNMENT' // answers did not line up with the rows sent, on every attempt
  | 'E_COLUMNS' // the input's columns do not fit the model
  | 'E_SERVICE_RETRIABLE' // overload or network on one attempt: retried with backoff (reported as E_SERVICE_UNAVAILABLE once the retries ran out)
  | 'E_SERVICE_UNAVAILABLE' // overload or network on every attempt: the retries ran out
  | 'E_SERVICE_UNREACHABLE' // nothing answers at the service URL (refused, unknown host)
  | 'E_SERVICE_URL' // something answers at the service URL, but not a Model Query Service
  | 'E_SERVICE_FATAL' // the service refused the request and will again
  | 'E_MODEL_NOT_FOUND' // unknown project, model or version
  | 'E_MODEL_NOT_READY' // the model is training or in error
  | 'E_MODEL_CHANGED' // the model was retrained while the run scored (servers without versions)
  | 'E_WRONG_ENVELOPE' // the server expects the other body envelope
  | 'E_UNAUTHORIZED' // credentials missing or refused
  | 'E_BAD_ROWS' // the engine failed on the rows of this request
  | 'E_ABORTED' // the operation was cancelled
  | 'E_INTERNAL'; // not one of the above: a bug to report, with the log at LOG_LEVEL=debug

export interface BatchScorerErrorOptions {
  retriable?: boolean;
  exitCode?: 1 | 2;
  cause?: unknown;
}

export class BatchScorerError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly exitCode: 1 | 2;

  constructor(code: ErrorCode, message: string, options: BatchScorerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? false;
    this.exitCode = options.exitCode ?? 1;
  }
}

/** A flag, option or setting is wrong: the user must change the command or configuration. */
export class UsageError extends BatchScorerError {
  constructor(message: string, options: Omit<BatchScorerErrorOptions, 'exitCode'> = {}) {
    super('E_USAGE', message, { ...options, exitCode: 2 });
  }
}

/** The input data is malformed; names the file and, where known, the row, line or byte. */
export class InputError extends BatchScorerError {
  constructor(message: string, code: 'E_INPUT' | 'E_INPUT_NOT_FOUND' | 'E_INPUT_CHANGED' = 'E_INPUT') {
    super(code, message, { exitCode: code === 'E_INPUT_NOT_FOUND' ? 2 : 1 });
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
export class RunStateError extends BatchScorerError {
  constructor(message: string, cause?: unknown) {
    super('E_RUN_STATE', message, { exitCode: 2, cause });
  }
}

/** Work was cancelled (a signal, a shutdown): nothing is wrong with it, so it may be done again. */
export class AbortedError extends BatchScorerError {
  constructor(message: string, cause?: unknown) {
    super('E_ABORTED', message, { retriable: true, cause });
  }
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR');
}

/** The stable code of any thrown value: its own, or E_INTERNAL for what is not a BatchScorerError. */
export function errorCode(err: unknown): ErrorCode {
  return err instanceof BatchScorerError ? err.code : 'E_INTERNAL';
}

/** The message of any thrown value, for places that must not throw while reporting. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
