import { errorCode } from '../errors.js';
import { RunQueue, type RunQueueCalls, type RunQueueOptions } from './producer.js';
import type { QueueConfig } from './queues.js';

/**
 * A RunQueue for a long-lived process (`serve`, a worker's scheduled runs), made when first used
 * and made again after a call failed with E_REDIS_UNAVAILABLE: a RunQueue's first wait for Redis
 * is final, and such a process must outlive a Redis that was away when it first asked. With
 * `ping`, every call pings first, so that while Redis is away it fails at once (`serve` answers
 * 503) instead of after the RunQueue's retries.
 */
export class ReconnectingRunQueue implements RunQueueCalls {
  private queue?: RunQueue;

  constructor(
    private readonly config: QueueConfig,
    private readonly ping?: () => Promise<void>,
    private readonly options: RunQueueOptions = {},
  ) {}

  enqueue: RunQueueCalls['enqueue'] = (submission, options) => this.use((runs) => runs.enqueue(submission, options));
  enqueueFileDrop: RunQueueCalls['enqueueFileDrop'] = (submission) => this.use((runs) => runs.enqueueFileDrop(submission));
  get: RunQueueCalls['get'] = (runId) => this.use((runs) => runs.get(runId));
  list: RunQueueCalls['list'] = (options) => this.use((runs) => runs.list(options));
  cancel: RunQueueCalls['cancel'] = (runId) => this.use((runs) => runs.cancel(runId));
  resume: RunQueueCalls['resume'] = (runId, caps) => this.use((runs) => runs.resume(runId, caps));
  judged: RunQueueCalls['judged'] = (manifest) => this.use((runs) => runs.judged(manifest));

  async close(): Promise<void> {
    await this.queue?.close();
  }

  /** Runs `fn` on the queue; after E_REDIS_UNAVAILABLE the next call gets a new one. */
  private async use<T>(fn: (queue: RunQueue) => Promise<T>): Promise<T> {
    await this.ping?.();
    const current = (this.queue ??= new RunQueue(this.config, this.options));
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
}
