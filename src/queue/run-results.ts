import { Job, type Queue } from 'bullmq';
import { type RunResult, runResultSchema } from '../scoring/index.js';
import type { RedisClient } from './queue-connection.js';
import type { RunJobData } from './queues.js';

/** The event a run's result is told as on the runs queue's event stream (see trackRunOutcomes). */
export const RUN_SETTLED_EVENT = 'run-settled';

/** Events the stream keeps at most, as BullMQ's own default. */
const MAX_EVENTS = 10_000;

/**
 * Keeps the result of a run's attempt (see runResult) beside its run job, where `status`, the API
 * and pages read the run's state (never from its job's failed reason), and tells the runs queue's
 * event stream of it (RUN_SETTLED_EVENT, with the result as JSON) for those who count runs. A run
 * job gone (removed by hand) keeps nothing; the event is told all the same.
 */
export async function keepRunResult(queue: Queue<RunJobData>, redis: RedisClient, runId: string, result: RunResult): Promise<void> {
  const job = await Job.fromId<RunJobData>(queue, runId);
  if (job) await job.updateData({ ...job.data, result });
  await redis.xadd(queue.keys.events, 'MAXLEN', '~', MAX_EVENTS, '*', 'event', RUN_SETTLED_EVENT, 'runId', runId, 'result', JSON.stringify(result));
}

/** The result a run job keeps, read through its schema (job data is anyone's who can write to Redis); undefined for none, or one that does not fit. */
export function keptResult(data: RunJobData): RunResult | undefined {
  return runResultSchema.safeParse(data.result).data;
}

/** A RUN_SETTLED_EVENT's result, read through its schema; undefined for one that does not fit. */
export function settledResult(args: { result?: unknown }): RunResult | undefined {
  if (typeof args.result !== 'string') return undefined;
  try {
    return runResultSchema.safeParse(JSON.parse(args.result)).data;
  } catch {
    return undefined;
  }
}
