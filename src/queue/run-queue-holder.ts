import { errorCode } from '../errors.js';
import { RunQueue } from './producer.js';
import type { QueueConfig } from './queues.js';

/**
 * A RunQueue for a long-lived process (`serve`, a worker's scheduled runs), made when first used
 * and made again after a call failed with E_REDIS_UNAVAILABLE: a RunQueue's first wait for Redis
 * is final, and such a process must outlive a Redis that was away when it first asked.
 */
export class RunQueueHolder {
  private queue?: RunQueue;

  constructor(private readonly config: QueueConfig) {}

  /** Runs `fn` on the queue; after E_REDIS_UNAVAILABLE the next call gets a new one. */
  async use<T>(fn: (queue: RunQueue) => Promise<T>): Promise<T> {
    const current = (this.queue ??= new RunQueue(this.config));
    try {
      return await fn(current);
    } catch (err) {
      if (errorCode(err) === 'E_REDIS_UNAVAILABLE' && this.queue === current) {
        this.queue = undefined;
        await current.close().catch(() => undefined);
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.queue?.close();
  }
}
