import { Queue } from 'bullmq';
import { redisUnavailable } from './queue-connection.js';
import { redisConnection, type QueueConfig, type QueueConnection } from './queues.js';

/**
 * One queue on a producer connection of its own (RunQueue's runs, `schedule sync|list`'s
 * schedules). `ready()` answers the queue once Redis has: the first wait is bounded
 * (CONNECT_TIMEOUT_MS, then E_REDIS_UNAVAILABLE, exit 2) and a failed one is final. Once
 * connected, a connection that dropped (Redis restarting, or gone) is waited for again, as long
 * at most, then E_REDIS_UNAVAILABLE too: ioredis's own words for a command it gave up on
 * ("Reached the max retries per request limit") name neither Redis nor what to check. The
 * connection goes on reconnecting, and the next call waits again. `close()` is safe twice.
 */
export class OwnConnectionQueue<Data = unknown> {
  readonly redis: QueueConnection;
  readonly queue: Queue<Data>;
  private connected?: Promise<void>;
  /** The wait for a dropped connection to be ready again, shared by the calls made meanwhile. */
  private reconnected?: Promise<void>;
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
    await (this.connected ??= waitForRedis(this.redis, this.queue.waitUntilReady(), () => this.lastError, true));
    if (this.redis.status !== 'ready') {
      // ioredis reconnects by itself, and says 'ready' when it has.
      await (this.reconnected ??= waitForRedis(this.redis, readyAgain(this.redis), () => this.lastError, false).finally(() => (this.reconnected = undefined)));
    }
    return this.queue;
  }

  close(): Promise<void> {
    return (this.closed ??= this.queue.close().then(() => this.redis.close()));
  }
}

/** How long a producer waits for Redis to answer, at first and after its connection dropped, before it gives up. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A producer's wait for Redis: resolves once `answered` (a queue's waitUntilReady, or the
 * connection ready again) does, or, past CONNECT_TIMEOUT_MS, fails with E_REDIS_UNAVAILABLE,
 * giving the connection's last error (`lastError`) as the reason when there was one. A `final`
 * wait (the first) drops the connections then; another leaves them reconnecting.
 */
async function waitForRedis(redis: QueueConnection, answered: Promise<unknown>, lastError: () => Error | undefined, final: boolean): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('still connecting')), CONNECT_TIMEOUT_MS)));
  try {
    await Promise.race([answered, timedOut]);
  } catch (err) {
    if (final) redis.disconnectAll();
    answered.catch(() => {}); // it fails too once disconnected; the reason is known already
    throw redisUnavailable(redis, CONNECT_TIMEOUT_MS, lastError() ?? err);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when the connection is ready again. */
function readyAgain(redis: QueueConnection): Promise<void> {
  return new Promise((resolve) => redis.once('ready', () => resolve()));
}
