import { QueueEvents } from 'bullmq';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { Logger } from '../log.js';
import { isConnectionError } from '../queue/queue-connection.js';
import { redisConnection, RUNS_QUEUE, type QueueConfig } from '../queue/queues.js';
import { failedByCancel } from '../queue/run-cancel.js';
import { failureCode } from '../queue/to-queue-error.js';
import { outcomeCounter } from './registry.js';

/** How a run ended, as `batch_scorer_runs_total` counts it. */
export type RunOutcome = 'succeeded' | 'failed' | 'cancelled' | 'expired';

/** The part of a run job's return value (see summary() in src/queue/run-job.ts) that is counted. */
const runResultSchema = z.object({
  state: z.string(),
  counts: z.object({ rowsScored: z.int().min(0), rowsQuarantined: z.int().min(0) }).optional(),
  /** The run succeeded under an earlier job, which was counted then. */
  repeat: z.literal(true).optional(),
});

/**
 * Counts finished runs by outcome, and the rows of the runs that succeeded exactly as their
 * manifests count them (`counts.rowsScored`, `counts.rowsQuarantined`), from the runs queue's
 * events: for `serve`, which scores nothing itself. BullMQ writes a job's `completed` or `failed`
 * event once, when it is final (an attempt retried writes `waiting` or `delayed`), so retries
 * do not count twice; a failed run resumed and then succeeding counts once failed and once
 * succeeded, its rows once. While Redis is away, the events wait in their stream and are read
 * when it is back. Each process counts what it saw since it started, as counters do.
 */
export function trackRunOutcomes(registry: Registry, config: QueueConfig, log?: Logger): { ready: Promise<void>; close(): Promise<void> } {
  const runs = outcomeCounter(registry, 'batch_scorer_runs_total', 'Runs that ended, by outcome: succeeded, failed, cancelled, expired (stopped on a cap).', [
    'succeeded',
    'failed',
    'cancelled',
    'expired',
  ] satisfies RunOutcome[]);
  const rows = outcomeCounter(
    registry,
    'batch_scorer_run_rows_total',
    "Rows of the runs that succeeded, by outcome (scored, quarantined), as their manifests' counts say.",
    ['scored', 'quarantined'],
  );

  // A blocking reader: like a worker's, its connection waits out a Redis restart.
  const redis = redisConnection(config, 'worker');
  const events = new QueueEvents(RUNS_QUEUE, { connection: redis, prefix: config.prefix });
  const onError = (err: Error) => {
    // Redis being away is for /readyz to say; reading goes on from the last event once it is back.
    if (!isConnectionError(err)) log?.warn({ err }, 'reading run events failed (retrying)');
  };
  redis.on('error', onError);
  events.on('error', onError);
  events.on('completed', ({ jobId, returnvalue }) => {
    const result = runResultSchema.safeParse(returnvalue);
    if (!result.success) {
      log?.warn({ runId: jobId }, 'a finished run job answered no run summary; not counted');
      return;
    }
    const { state, counts, repeat } = result.data;
    if (repeat) return;
    const outcome: RunOutcome = state === 'succeeded' ? 'succeeded' : state === 'cancelled' ? 'cancelled' : 'failed';
    runs.inc({ outcome });
    if (outcome === 'succeeded' && counts) {
      rows.inc({ outcome: 'scored' }, counts.rowsScored);
      rows.inc({ outcome: 'quarantined' }, counts.rowsQuarantined);
    }
  });
  events.on('failed', ({ failedReason }) => {
    runs.inc({ outcome: failureCode(failedReason) === 'E_EXPIRED' ? 'expired' : failedByCancel(failedReason) ? 'cancelled' : 'failed' });
  });

  const ready = events.waitUntilReady().then(() => {});
  // Nobody may wait for it (serve does not), and it fails once closed before Redis answered.
  ready.catch(() => undefined);
  return {
    ready,
    close: async () => {
      await events.close();
      await redis.close();
    },
  };
}
