import { BatchScorerError } from '../errors.js';
import type { Envelope, ServiceClient } from '../service/client.js';
import type { RequestLimit } from '../service/request-limit.js';
import type { ModelRef } from '../service/model-ref.js';
import { ServiceError } from '../service/service-error.js';
import type { InputRow } from '../formats/row-parser.js';
import type { OutputSchema } from './output-schema.js';
import type { EncodedRow } from './request-row.js';
import type { SegmentCounts } from './segment-counts.js';

/** What scoring a batch needs; shared by every batch of a segment. */
export interface BatchScorer {
  client: ServiceClient;
  /** The model, pinned to the run's version. */
  model: ModelRef;
  envelope: Envelope;
  params: Record<string, unknown>;
  rowIdMember: string;
  schema: OutputSchema;
  /** The process-wide limit on predict requests in flight. */
  limit: RequestLimit;
  counts: SegmentCounts;
  signal?: AbortSignal;
}

/** A row to score: as read, and as it is sent. */
export interface PendingRow {
  row: InputRow;
  request: EncodedRow;
}

/** A row's outcome: prediction values in schema order, or the server's reason for refusing it. */
export type RowOutcome = { row: InputRow; predictions: unknown[] } | { row: InputRow; error: { status?: number; title?: string; detail: string } };

/**
 * Scores one batch. An engine failure (MLEngineException) on several rows splits the batch in
 * halves until the failing rows stand alone; those are quarantined, the rest scored. The
 * concurrency limit wraps each request, not the splitting, so halves never wait on their parent.
 */
export async function scoreBatch(scorer: BatchScorer, rows: readonly PendingRow[]): Promise<RowOutcome[]> {
  let answer: Record<string, unknown>[];
  try {
    scorer.counts.requests++;
    answer = await scorer.limit.run(() =>
      scorer.client.predict(
        scorer.model,
        rows.map((r) => r.request.json),
        {
          envelope: scorer.envelope,
          params: scorer.params,
          signal: scorer.signal,
          onRetry: () => scorer.counts.retries++,
          onAttempt: ({ ms, error }) => scorer.limit.observe(error === undefined ? 'answered' : error.overload ? 'overloaded' : 'failed', ms),
        },
      ),
    );
  } catch (err) {
    if (!(err instanceof ServiceError) || err.kind !== 'bad-rows') throw err;
    if (rows.length === 1) {
      return [{ row: rows[0].row, error: { status: err.status, title: err.title, detail: err.detail ?? err.message } }];
    }
    scorer.counts.splits++;
    const half = Math.ceil(rows.length / 2);
    const [a, b] = await Promise.all([scoreBatch(scorer, rows.slice(0, half)), scoreBatch(scorer, rows.slice(half))]);
    return [...a, ...b];
  }
  return merge(scorer, rows, answer);
}

/**
 * Joins answer rows to request rows by position, and proves the join with the echoed row id
 * where the server echoes it. A count or id mismatch stops the run: a silent shift would put
 * one row's prediction on another.
 */
function merge(scorer: BatchScorer, rows: readonly PendingRow[], answer: Record<string, unknown>[]): RowOutcome[] {
  if (answer.length !== rows.length) {
    throw new BatchScorerError(
      'E_ALIGNMENT',
      `the model answered ${answer.length} rows for ${rows.length} sent (rows ${rows[0].row.index + 1}-${rows[rows.length - 1].row.index + 1}); ` +
        'a time-series model answers a forecast horizon, not one row per input row, and cannot be scored row by row',
    );
  }
  const id = scorer.rowIdMember;
  return rows.map(({ row }, i) => {
    const a = answer[i] ?? {};
    const echoed = a[id];
    if (echoed === undefined || echoed === null) scorer.counts.unechoedRows++;
    else if (String(echoed) !== String(row.index)) {
      throw new BatchScorerError('E_ALIGNMENT', `answer row ${i} carries ${id} ${String(echoed)} where ${row.index} was sent: the answer is out of order`);
    }
    const predictions: unknown[] = [];
    for (const target of scorer.schema.targets) {
      for (const c of target.columns) predictions.push(a[c.member] ?? null);
      if (target.interval) {
        const [value, min, max] = [a[target.target], a[`${target.target}_min`], a[`${target.target}_max`]];
        if (typeof value === 'number' && typeof min === 'number' && typeof max === 'number' && !(min <= value && value <= max)) {
          scorer.counts.intervalViolations++;
        }
      }
    }
    return { row, predictions };
  });
}
