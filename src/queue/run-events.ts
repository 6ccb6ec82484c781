import { QueueEvents } from 'bullmq';
import type { Logger } from '../log.js';
import { isConnectionError } from './queue-connection.js';
import { redisConnection, RUNS_QUEUE, type QueueConfig } from './queues.js';

/** The runs queue's events (a job's `completed`, `failed`, ...), read on a connection of their own. */
export interface RunEvents {
  events: QueueEvents;
  /** Resolves once the events are read; nobody need wait for it, and it fails once closed before Redis answered. */
  ready: Promise<void>;
  /** Stops reading and closes the connection. */
  close(): Promise<void>;
}

/**
 * Opens the runs queue's events on a blocking connection of its own, which, like a worker's,
 * waits out a Redis restart: while Redis is away, the events wait in their stream and are read
 * once it is back (from the last one read). Other read errors are logged and retried.
 */
export function openRunEvents(config: QueueConfig, log?: Logger): RunEvents {
  const redis = redisConnection(config, 'worker');
  const events = new QueueEvents(RUNS_QUEUE, { connection: redis, prefix: config.prefix });
  const onError = (err: Error) => {
    // Redis being away is for /readyz to say; reading goes on from the last event once it is back.
    if (!isConnectionError(err)) log?.warn({ err }, 'reading run events failed (retrying)');
  };
  redis.on('error', onError);
  events.on('error', onError);
  const ready = events.waitUntilReady().then(() => {});
  // Nobody need wait for it (serve does not), and it fails once closed before Redis answered.
  ready.catch(() => undefined);
  return {
    events,
    ready,
    close: async () => {
      await events.close();
      await redis.close();
    },
  };
}
