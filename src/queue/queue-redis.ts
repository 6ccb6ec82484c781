import { Redis, type RedisOptions } from 'ioredis';
import { BatchScorerError, errorMessage } from '../errors.js';
import { redactUrl } from '../log.js';

/**
 * A Redis connection of queue mode. It knows its URL as it may be shown (the password masked) and
 * keeps the connections duplicated from it (BullMQ opens a blocking one per worker that way), so
 * that a shutdown can drop them all: while Redis is away, BullMQ's close() and QUIT wait for it,
 * for ever if it does not come back.
 */
export class QueueRedis extends Redis {
  /** REDIS_URL as logs and errors show it: `redis://user:***@host:6379`. */
  readonly shownUrl: string;
  private readonly copies: Redis[] = [];

  constructor(url: string, options: RedisOptions) {
    super(url, options);
    this.shownUrl = redactUrl(url, { keepUser: true });
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    const copy = super.duplicate(override);
    this.copies.push(copy);
    return copy;
  }

  /** QUIT when connected (replies in flight still arrive); while Redis is away QUIT would wait for it, so the connections are dropped. */
  async close(): Promise<void> {
    if (this.status === 'ready') await this.quit();
    else this.disconnectAll();
  }

  /** Drops this connection and its copies at once, without waiting for Redis (commands in flight fail). */
  disconnectAll(): void {
    for (const c of [this, ...this.copies]) c.disconnect();
  }
}

/** The error of a command that cannot reach Redis: what was tried, why it failed, what to check. */
export function redisUnavailable(redis: QueueRedis, waitedMs: number, cause: unknown): BatchScorerError {
  return new BatchScorerError(
    'E_REDIS_UNAVAILABLE',
    `Redis at ${redis.shownUrl} did not answer within ${waitedMs / 1000} s (${errorMessage(cause)}); check REDIS_URL and that Redis is running`,
    { exitCode: 2, retriable: true, cause },
  );
}
