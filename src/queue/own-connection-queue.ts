import { Queue } from 'bullmq';
import { redisUnavailable } from './queue-connection.js';
import { redisConnection, type QueueConfig, type QueueConnection } from './queues.js';

/**
 * One queue on a producer connection of its own (RunQueue's runs, `schedule sync|list`'s
 * schedules). `ready()` answers the queue once Redis has: the first wait is bounded
 * (CONNECT_TIMEOUT_MS, then E_REDIS_UNAVAILABLE, exit 2) and a failed one is final. `close()` is
 * safe twice.
 */
export class OwnConnectionQueue<Data = unknown> {
  readonly redis: QueueConnection;
  readonly queue: Queue<Data>;
  private connected?: Promise<void>;
  private lastError?: Error;
  private closed?: Promise<void>;

  constructor(config: QueueConfig, name: string) {
    this.redis = redisConnection(config, 'producer');
    this.queue = new Queue<Data>(name, { connection: this.redis, prefix: config.prefix });
    // Every failed connection attempt is an 'error' event: kept for the message, and listened to,
    // since ioredis and BullMQ print an error event nobody listens to, stack and all.
    const keep = (err: Error) => void (this.lastError = err);
    this.redis.on('error', keep);
    this.queue.on('error', keep);
  }

  async ready(): Promise<Queue<Data>> {
    await (this.connected ??= waitForRedis(this.redis, this.queue.waitUntilReady(), () => this.lastError));
    return this.queue;
  }

  close(): Promise<void> {
    return (this.closed ??= this.queue.close().then(() => this.redis.close()));
  }
}

/** How long a producer waits for Redis to answer at first before it gives up. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A producer's first wait for Redis: resolves once `answered` (a queue's waitUntilReady) does,
 * or, past CONNECT_TIMEOUT_MS, drops the connections and fails with E_REDIS_UNAVAILABLE, giving
 * the connection's last error (`lastError`) as the reason when there was one.
 */
async function waitForRedis(redis: QueueConnection, answered: Promise<unknown>, lastError: () => Error | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('still connecting')), CONNECT_TIMEOUT_MS)));
  try {
    await Promise.race([answered, timedOut]);
  } catch (err) {
    redis.disconnectAll();
    answered.catch(() => {}); // it fails too once disconnected; the reason is known already
    throw redisUnavailable(redis, CONNECT_TIMEOUT_MS, lastError() ?? err);
  } finally {
    clearTimeout(timer);
  }
}
