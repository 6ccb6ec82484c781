import { isNotConnectionError } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { BatchScorerError, errorMessage } from '../errors.js';

/**
 * A connection to run commands on: one Redis node or a Redis Cluster. Every key under a queue
 * prefix sits on one cluster slot (its hash tag), so commands of several keys (MULTI, scripts,
 * MGET) answer alike on both.
 */
export type RedisClient = Redis | Cluster;

/** What queue mode adds to a connection of either kind (QueueRedis, QueueCluster). */
export interface QueueConnectionExtras {
  /** REDIS_URL as logs and errors show it: `redis://user:***@host:6379`. */
  readonly shownUrl: string;
  /** QUIT when connected (replies in flight still arrive); while Redis is away QUIT would wait for it, so the connections are dropped. */
  close(): Promise<void>;
  /** Drops this connection and its copies at once, without waiting for Redis (commands in flight fail). */
  disconnectAll(): void;
}

/**
 * The connections duplicated from a queue connection (BullMQ opens a blocking one per worker
 * that way), kept so that a shutdown can drop them all: while Redis is away, BullMQ's close()
 * and QUIT wait for it, for ever if it does not come back.
 */
export class ConnectionCopies {
  private readonly copies: RedisClient[] = [];

  keep<C extends RedisClient>(copy: C): C {
    this.copies.push(copy);
    return copy;
  }

  /** QueueConnectionExtras.close for `owner`, the connection the copies were made from. */
  async close(owner: RedisClient): Promise<void> {
    if (owner.status === 'ready') await owner.quit();
    else this.disconnectAll(owner);
  }

  /** QueueConnectionExtras.disconnectAll for `owner`. */
  disconnectAll(owner: RedisClient): void {
    for (const c of [owner, ...this.copies]) c.disconnect();
  }
}

/** The error of a command that cannot reach Redis: what was tried, why it failed, what to check. */
export function redisUnavailable(redis: QueueConnectionExtras, waitedMs: number, cause: unknown): BatchScorerError {
  return new BatchScorerError(
    'E_REDIS_UNAVAILABLE',
    `Redis at ${redis.shownUrl} did not answer within ${waitedMs / 1000} s (${errorMessage(cause)}); check REDIS_URL and that Redis is running`,
    { cause },
  );
}

/**
 * Whether an error says Redis cannot be reached, rather than that a command failed: BullMQ's
 * rule, a cluster none of whose nodes answers (ioredis's ClusterAllFailedError, or no seed node
 * at the start), and a producer's command given up while its connection was down (ioredis's
 * MaxRetriesPerRequestError), which BullMQ's rule takes for failed commands.
 */
export function isConnectionError(err: Error): boolean {
  return (
    !isNotConnectionError(err) ||
    err.name === 'ClusterAllFailedError' ||
    err.name === 'MaxRetriesPerRequestError' ||
    err.message.startsWith('None of startup nodes is available')
  );
}

/**
 * Whether a producer's call failed because its connection dropped under it (Redis restarting, or
 * gone): ioredis's or BullMQ's error, not our E_REDIS_UNAVAILABLE (whose reason may name
 * ECONNREFUSED too). The next call waits for Redis to be back (see OwnConnectionQueue.ready).
 */
export function isDroppedCall(err: unknown): boolean {
  return err instanceof Error && !(err instanceof BatchScorerError) && isConnectionError(err);
}

/**
 * A producer's call, made again once when the connection dropped under it: the call again waits
 * for Redis and, if it does not come back, fails E_REDIS_UNAVAILABLE naming Redis and what to
 * check, instead of ioredis's words for the command it gave up on.
 */
export async function againIfDropped<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!isDroppedCall(err)) throw err;
    return call();
  }
}
