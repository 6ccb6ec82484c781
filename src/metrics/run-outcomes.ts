import { type QueueEvents, RUN_SETTLED_EVENT, settledResult } from '../queue/index.js';
import type { Registry } from 'prom-client';
import type { EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import { ENDING_STATES } from '../scoring/index.js';
import { outcomeCounter } from './registry.js';

/**
 * Counts the attempts of runs that ended, by the state they ended in (see run-lifecycle.ts), and
 * the rows of the runs that succeeded exactly as their manifests count them (`counts.rowsScored`,
 * `counts.rowsQuarantined`), from the run results told on the runs queue's event stream (see
 * keepRunResult): for `serve`, which scores nothing itself. A result is told once per attempt's
 * end, and once more when a held run is judged (it then counts as succeeded, or failed), so
 * retries do not count twice; a failed run resumed and then succeeding counts once failed and
 * once succeeded, its rows once. While Redis is away, the events wait in their stream and are
 * read when it is back. Each process counts what it saw since it started, as counters do.
 */
export function trackRunOutcomes(registry: Registry, events: QueueEvents, log?: Logger): void {
  const runs = outcomeCounter(
    registry,
    'batch_scorer_runs_total',
    'Run attempts that ended, by the state they ended in: succeeded, failed, cancelled, expired (stopped on a cap), held (by the drift gate; counted again when judged).',
    [...ENDING_STATES],
  );
  const rows = outcomeCounter(
    registry,
    'batch_scorer_run_rows_total',
    "Rows of the runs that succeeded, by outcome (scored, quarantined), as their manifests' counts say.",
    ['scored', 'quarantined'],
  );
  // A custom event of the stream: BullMQ emits it by its name, with its fields.
  (events as unknown as EventEmitter).on(RUN_SETTLED_EVENT, (args: { runId?: string; result?: unknown }) => {
    const result = settledResult(args);
    if (!result) {
      log?.warn({ runId: args.runId }, 'a run result on the event stream does not fit its schema; not counted');
      return;
    }
    runs.inc({ outcome: result.state });
    if (result.state === 'succeeded' && result.counts) {
      rows.inc({ outcome: 'scored' }, result.counts.rowsScored);
      rows.inc({ outcome: 'quarantined' }, result.counts.rowsQuarantined);
    }
  });
}
