import type { Logger } from '../log.js';
import { type Envelope, formatModelRef, type ModelRef, NotAnObject, type PickedRow, type RequestSlots, ServiceError } from '../service/index.js';
import type { Predictor } from './predictor.js';
import type { InputRow } from '../formats/index.js';
import { errorCode } from '../errors.js';
import { answerCheck, INVALID_PREDICTION } from './answer-check.js';
import { excerpt } from '../text-excerpt.js';
import type { OutputSchema } from './output-schema.js';
import type { RequestBatch } from './request-batch.js';
import { echoesRowId } from './request-row.js';
import { loadOutcome, predictOutcome, type ScoringObserver } from './scoring-observer.js';
import type { SegmentCounts } from './segment-counts.js';

/** What scoring a segment's batches needs, the same for each of them (a dry run's canary batches are one such segment). */
export interface SegmentScoring {
  client: Predictor;
  /** The model, pinned to the run's version. */
  model: ModelRef;
  envelope: Envelope;
  params: Record<string, unknown>;
  /** The row id member each request row carries; undefined when the server echoes none. */
  rowIdMember: string | undefined;
  /** The server echoed the member when the run was planned, so every answer row must carry it. */
  rowIdEchoed: boolean;
  schema: OutputSchema;
  /** The slots its predict requests take while in flight: the run's --concurrency in this process. */
  slots: RequestSlots;
  counts: SegmentCounts;
  /** The segment's logger: retries are logged with its run and segment ids. */
  log: Logger;
  signal?: AbortSignal;
  /** Hears requests, attempts and retries (metrics). */
  observer?: ScoringObserver;
  /** Shadow scoring: the other model every batch is also sent to, and the members read of its answers (see comparedMembers). */
  compare?: { model: ModelRef; members: string[] };
}

/**
 * A row's outcome: prediction values in schema order (and, in shadow scoring, the other model's
 * members, or null where its request failed), or the server's reason for refusing it.
 */
export type RowOutcome = ScoredRow | { row: InputRow; error: { status?: number; title?: string; detail: string } };
/** A row the model answered: prediction values in schema order, and in shadow scoring the other model's members (null where it failed). */
type ScoredRow = { row: InputRow; predictions: unknown[]; other?: unknown[] | null };

/**
 * Whether a batch of `rows` rows and `bytes` bytes is full before a row of `next` bytes: it has
 * --batch-size rows, or the row would take it past --max-batch-bytes (a row alone is always sent).
 */
export function batchIsFull(rows: number, bytes: number, next: number, limits: { batchSize: number; maxBatchBytes: number }): boolean {
  return rows > 0 && (rows >= limits.batchSize || bytes + next > limits.maxBatchBytes);
}

/**
 * Scores one batch. An engine failure (MLEngineException) on several rows splits the batch in
 * halves until the failing rows stand alone; those are quarantined, the rest scored. The whole
 * batch and a row standing alone are tried twice before they count as refused; the halves between
 * are split at once (`split`), since an engine refuses the same rows every time: retrying every
 * level cost a real server a retry and its wait per halving. The request slots wrap each request's
 * exchange with the service, not the splitting (halves never wait on their parent), nor the
 * reading of an answer or a retry's wait.
 */
export async function scoreBatch(scoring: SegmentScoring, batch: RequestBatch, split = false): Promise<RowOutcome[]> {
  const { rows } = batch;
  const layout = answerLayout(scoring.schema, scoring.rowIdMember);
  // The other model is asked at the same time, in the same slots: the input is read once.
  const other = scoring.compare && askOther(scoring, scoring.compare, batch);
  let answer: PickedRow[];
  try {
    answer = await predictBatch(scoring, scoring.model, batch, layout, !split || rows.length === 1);
  } catch (err) {
    await other;
    if (!(err instanceof ServiceError) || err.kind !== 'bad-rows') throw err;
    if (rows.length === 1) {
      return [{ row: rows[0], error: { status: err.status, title: err.title, detail: err.detail ?? err.message } }];
    }
    scoring.counts.splits++;
    const half = Math.ceil(rows.length / 2);
    const [a, b] = await Promise.all([scoreBatch(scoring, batch.slice(0, half), true), scoreBatch(scoring, batch.slice(half, rows.length), true)]);
    return [...a, ...b];
  }
  const outcomes = merge(scoring, layout, rows, answer as unknown[][]);
  if (other) {
    const theirs = await other;
    for (let i = 0; i < outcomes.length; i++) {
      const outcome = outcomes[i];
      if ('predictions' in outcome) outcome.other = theirs ? (theirs[i] as unknown[]) : null;
    }
  }
  return outcomes;
}

/** One predict request of a batch to `model`, its answer checked against the rows sent. */
function predictBatch(scoring: SegmentScoring, model: ModelRef, batch: RequestBatch, layout: AnswerLayout, retryEngineFailure = true): Promise<PickedRow[]> {
  scoring.counts.requests++;
  const { observer } = scoring;
  return scoring.client.predictMembers(model, batch.body(), layout.members, {
    rows: batch.rows.length,
    envelope: scoring.envelope,
    params: scoring.params,
    signal: scoring.signal,
    retryEngineFailure,
    log: scoring.log,
    // A slot is held while the service works on the batch, not while its answer is read or a retry waits.
    slot: (exchange) =>
      scoring.slots.run(async () => {
        observer?.requestStarted();
        try {
          return await exchange();
        } finally {
          observer?.requestEnded();
        }
      }, scoring.signal),
    check: (answer) => checkAlignment(scoring, layout, batch.rows, answer),
    onRetry: () => {
      scoring.counts.retries++;
      observer?.retry();
    },
    onAttempt: ({ ms, error }) => {
      const outcome = predictOutcome(error);
      scoring.slots.observe(loadOutcome(outcome), ms);
      observer?.requestDone(outcome, ms / 1000);
    },
  });
}

/**
 * The other model's answer to the batch, or null where it failed (its rows are then not compared):
 * shadow scoring never fails the run it watches. A stop (an aborted signal) still stops it.
 */
async function askOther(scoring: SegmentScoring, compare: NonNullable<SegmentScoring['compare']>, batch: RequestBatch): Promise<PickedRow[] | null> {
  const { members } = compare;
  // Its answers are compared, not written: no value of theirs is refused.
  const layout: AnswerLayout = {
    members,
    columns: [],
    intervals: [],
    rowId: scoring.rowIdMember === undefined ? undefined : members.length - 1,
    refusal: () => undefined,
  };
  try {
    return await predictBatch(scoring, compare.model, batch, layout);
  } catch (err) {
    // A cap reached stops the run's sending, the other model's too: its rows would not be compared as a run that never stopped compares them.
    if (scoring.signal?.aborted || errorCode(err) === 'E_EXPIRED') throw err;
    scoring.log.warn({ err, model: formatModelRef(compare.model) }, 'the compared model did not answer a batch: its rows are not compared');
    return null;
  }
}

/**
 * The answer members a batch reads, and where each use finds its value among them: the output
 * columns in schema order, then each interval target's value, min and max, then the row id.
 */
interface AnswerLayout {
  members: string[];
  /** The places of the output columns' members, in schema order. */
  columns: number[];
  /** Per target with an interval: the places of `<t>`, `<t>_min` and `<t>_max`. */
  intervals: [number, number, number][];
  /** The place of the row id member; undefined without one. */
  rowId: number | undefined;
  /** Why an answer row cannot be written (see answerCheck); undefined for one that can. */
  refusal: (answer: readonly unknown[]) => string | undefined;
}

function answerLayout(schema: OutputSchema, rowIdMember: string | undefined): AnswerLayout {
  const members: string[] = [];
  const place = (member: string) => {
    const at = members.indexOf(member);
    return at >= 0 ? at : members.push(member) - 1;
  };
  const columns = schema.targets.flatMap((t) => t.columns.map((c) => place(c.member)));
  const intervals = schema.targets
    .filter((t) => t.interval)
    .map((t): [number, number, number] => [place(t.target), place(`${t.target}_min`), place(`${t.target}_max`)]);
  return { members, columns, intervals, rowId: rowIdMember === undefined ? undefined : place(rowIdMember), refusal: answerCheck(schema, columns) };
}

/**
 * Proves an answer lines up with the rows sent: one answer row (an object) per row sent, each
 * carrying the row id sent with it where the server echoes it. A mismatch is a `bad-answer` fault
 * (a proxy cutting a body, a flaky engine), tried again with backoff; one that persists on every
 * attempt stops the run (E_ALIGNMENT), since a silent shift would put one row's prediction on
 * another. Not an overload: `--concurrency auto` does not back off for it.
 */
function checkAlignment(scoring: SegmentScoring, layout: AnswerLayout, rows: readonly InputRow[], answer: PickedRow[]): void {
  const span = () => `rows ${rows[0].index + 1}-${rows[rows.length - 1].index + 1}`;
  if (answer.length !== rows.length) {
    throw new ServiceError('bad-answer', `the model answered ${answer.length} rows for the ${rows.length} sent (${span()})`);
  }
  const id = scoring.rowIdMember;
  for (let i = 0; i < rows.length; i++) {
    const a = answer[i];
    if (a instanceof NotAnObject) {
      throw new ServiceError('bad-answer', `answer row ${i} (${span()}) is ${excerpt(JSON.stringify(a.value))}, not a prediction object`);
    }
    if (layout.rowId === undefined) continue;
    const echoed = a[layout.rowId];
    if (!scoring.rowIdEchoed && (echoed === undefined || echoed === null)) continue;
    if (!echoesRowId(echoed, rows[i].index)) {
      const what =
        echoed === undefined || echoed === null
          ? `lacks ${id}, which the server echoed when the run was planned`
          : `carries ${id} ${excerpt(JSON.stringify(echoed))} where ${rows[i].index} was sent`;
      throw new ServiceError('bad-answer', `answer row ${i} (${span()}) ${what}: the answer is out of order`);
    }
  }
}

/**
 * Joins answer rows, already proven by `checkAlignment`, to the rows sent: each row's predictions,
 * or its quarantine where the model answered what no prediction can be (see answerCheck).
 */
function merge(scoring: SegmentScoring, layout: AnswerLayout, rows: readonly InputRow[], answer: unknown[][]): RowOutcome[] {
  const { rowId, columns, intervals, refusal } = layout;
  // Rows without the echo are aligned by position alone: all of them without a member, none once it was proven.
  if (rowId === undefined) scoring.counts.unechoedRows += rows.length;
  else if (!scoring.rowIdEchoed) for (const a of answer) if (a[rowId] === undefined || a[rowId] === null) scoring.counts.unechoedRows++;
  // Where the output columns are the first members read, in order (as for most models), an answer
  // row's array becomes the row's predictions, cut to them: no second array per row.
  const inPlace = columns.every((member, c) => member === c);
  return rows.map((row, i): RowOutcome => {
    const a = answer[i];
    const refused = refusal(a);
    if (refused !== undefined) return { row, error: { title: INVALID_PREDICTION, detail: refused } };
    // Indexed, not destructured: an iterator and an array per row and interval were about 4% of a CPU-bound run's garbage.
    for (let t = 0; t < intervals.length; t++) {
      const interval = intervals[t];
      const value = a[interval[0]];
      const min = a[interval[1]];
      const max = a[interval[2]];
      if (typeof value === 'number' && typeof min === 'number' && typeof max === 'number' && !(min <= value && value <= max)) {
        scoring.counts.intervalViolations++;
      }
    }
    // Otherwise sized once: an array grown by push starts with room for 17 values, and one lives per row until it is written.
    const predictions = inPlace ? a : new Array<unknown>(columns.length);
    for (let c = 0; c < columns.length; c++) predictions[c] = a[columns[c]] ?? null;
    predictions.length = columns.length;
    return { row, predictions };
  });
}
