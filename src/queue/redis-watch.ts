import type { Logger } from '../log.js';
import { isConnectionError } from './queue-connection.js';
import type { QueueConnection } from './queues.js';

/** While Redis stays away, a worker says so again at most this often. */
export const WAITING_LOG_EVERY_MS = 60_000;

/**
 * Says in a worker's log when its Redis is away: once when it goes (or is not there at start),
 * then at most once a minute while it stays away, and once when it is back. ioredis and BullMQ
 * report an error on every reconnection attempt, several a second; they all end up here instead
 * of flooding the log. The worker's own connection decides whether Redis is away; errors of the
 * connections BullMQ duplicated from it say the same, late or early, and are merged in.
 */
export class RedisWatch {
  private awaySince?: number;
  private lastSaid = 0;
  private stopped = false;

  constructor(
    private readonly redis: QueueConnection,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    redis.on('error', (err: Error) => this.away(err));
    redis.on('ready', () => this.back());
  }

  /** True while Redis is away. */
  get waiting(): boolean {
    return this.awaySince !== undefined;
  }

  /** An 'error' event of a BullMQ worker or queue. */
  error(err: Error): void {
    if (this.stopped) this.log.debug({ err }, 'queue error while shutting down');
    else if (this.waiting || this.redis.status !== 'ready') this.away(err);
    else if (!isConnectionError(err)) this.log.error({ err }, 'queue error (retrying)');
    else this.log.debug({ err }, 'connection error of a duplicated connection');
  }

  /** From now on connection errors are expected (the shutdown drops the connections): nothing more is said. */
  stop(): void {
    this.stopped = true;
  }

  private away(err: Error): void {
    if (this.stopped) return;
    const now = this.now();
    if (this.awaySince === undefined) {
      this.awaySince = now;
      this.say('warn', { err }, 'waiting for Redis');
    } else if (now - this.lastSaid >= WAITING_LOG_EVERY_MS) {
      this.say('warn', { err, waitingSeconds: Math.round((now - this.awaySince) / 1000) }, 'still waiting for Redis');
    }
  }

  private back(): void {
    if (this.awaySince === undefined || this.stopped) return;
    this.say('info', { waitedSeconds: Math.round((this.now() - this.awaySince) / 1000) }, 'connected to Redis');
    this.awaySince = undefined;
  }

  private say(level: 'warn' | 'info', fields: Record<string, unknown>, message: string): void {
    this.lastSaid = this.now();
    this.log[level]({ redis: this.redis.shownUrl, ...fields }, message);
  }
}
