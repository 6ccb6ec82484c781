import { Queue } from 'bullmq';
import { waitForRedis, type QueueRedis } from './queue-redis.js';
import { redisConnection, SCHEDULES_QUEUE, type QueueConfig } from './queues.js';

/**
 * The schedules queue on a producer connection, for the commands that read and change its job
 * schedulers (`schedule sync`, `schedule list`). `ready()` answers the queue once Redis has; the
 * first wait is bounded as RunQueue's is (E_REDIS_UNAVAILABLE, exit 2). `close()` is safe twice.
 */
export class SchedulesQueue {
  private readonly redis: QueueRedis;
  private readonly queue: Queue;
  private connected?: Promise<void>;
  private lastError?: Error;
  private closed?: Promise<void>;

  constructor(config: QueueConfig) {
    this.redis = redisConnection(config.redisUrl, 'producer');
    this.queue = new Queue(SCHEDULES_QUEUE, { connection: this.redis, prefix: config.prefix });
    // Kept for the message, and listened to, so that ioredis and BullMQ do not print each one.
    const keep = (err: Error) => void (this.lastError = err);
    this.redis.on('error', keep);
    this.queue.on('error', keep);
  }

  async ready(): Promise<Queue> {
    await (this.connected ??= waitForRedis(this.redis, this.queue.waitUntilReady(), () => this.lastError));
    return this.queue;
  }

  close(): Promise<void> {
    return (this.closed ??= this.queue.close().then(() => this.redis.close()));
  }
}
