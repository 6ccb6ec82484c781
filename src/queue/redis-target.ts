import { BatchScorerError } from '../errors.js';
import { parseRedisUrl, type RedisTarget } from '../config/index.js';
import type { QueueConfig } from './queues.js';

/**
 * The hash tag of a queue prefix: the text between its first `{` and the first `}` after it,
 * when not empty. Redis Cluster places a key by its hash tag when it has one, so every key of a
 * prefix with one sits on one slot, as BullMQ's scripts (and our MULTIs) need on a cluster.
 */
export function hashTagOf(prefix: string): string | undefined {
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : undefined;
}

/**
 * Where a queue's Redis is: REDIS_URL read, and on a cluster QUEUE_PREFIX checked for a hash tag
 * (without one, a queue's keys would spread over slots and BullMQ's scripts fail with CROSSSLOT).
 */
export function redisTarget(queue: QueueConfig): RedisTarget {
  const target = parseRedisUrl(queue.redisUrl);
  if (target.kind === 'cluster' && hashTagOf(queue.prefix) === undefined) {
    throw new BatchScorerError(
      'E_CONFIG',
      `QUEUE_PREFIX "${queue.prefix}" has no hash tag, which a Redis Cluster (${target.shownUrl}) needs to keep each queue's keys on one slot: set QUEUE_PREFIX={${queue.prefix.replace(/[{}]/g, '') || 'batch-scorer'}}, for example`,
    );
  }
  return target;
}
