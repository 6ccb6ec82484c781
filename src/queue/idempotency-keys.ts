import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { BatchScorerError } from '../errors.js';
import type { RedisClient } from './queue-connection.js';
import { storedRecord } from './stored-record.js';

/** How long a key answers its first answer again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * How long a reservation holds a key while its submission is enqueued (which takes milliseconds):
 * the key of a process that died in between is free again after this, not after a day.
 */
const RESERVATION_MS = 60_000;

/** How long a request whose key another request holds waits for that one's answer, by default, before E_IDEMPOTENCY_IN_PROGRESS. */
export const IDEMPOTENCY_WAIT_MS = 10_000;
const POLL_MS = 50;

/** A submission's Idempotency-Key, and the hash of what it asks (see submissionHash in src/http/idempotency-key.ts). */
export interface IdempotentRequest {
  key: string;
  bodyHash: string;
}

/** What `enqueue` answers, kept to be answered again. */
const answerSchema = z.object({ runId: z.string(), created: z.boolean(), resumed: z.boolean().optional() });
export type EnqueueAnswer = z.output<typeof answerSchema>;

/** A key's record: the body hash it was first used with, and either the reservation of the request answering it or its answer. */
const recordSchema = z.union([z.object({ hash: z.string(), answer: answerSchema }), z.object({ hash: z.string(), reservation: z.string() })]);

/** Replaces a key's value if it still holds this reservation (or nothing), with its expiry; 1 when it did. */
const FINISH = `
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

/** Deletes a key if it still holds this reservation. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * `POST /runs`'s Idempotency-Keys: `<prefix>:idempotency:<sha256 of the key>`, one per key for the
 * deployment (the API knows no callers apart: one API_TOKEN), holding the first answer for
 * IDEMPOTENCY_TTL_MS. A key is reserved (SET NX) before its submission is enqueued, so that of
 * requests arriving at once only one enqueues; the others wait for its answer. A failed enqueue
 * frees the key: only answers are kept, never errors.
 */
export class IdempotencyKeys {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly waitMs = IDEMPOTENCY_WAIT_MS,
  ) {}

  /** The Redis key of an Idempotency-Key: hashed, so a key of any characters is one bounded Redis key on the prefix's slot. */
  redisKey(key: string): string {
    return `${this.prefix}:idempotency:${createHash('sha256').update(key).digest('hex')}`;
  }

  /**
   * The answer of the first request with this key, `replayed` when it is another's: `enqueue`'s,
   * once, if this request is the first (or the first failed); the stored one for the same body;
   * E_IDEMPOTENCY_KEY_REUSED for another body; E_IDEMPOTENCY_IN_PROGRESS when the first has not
   * answered within `waitMs`.
   */
  async once(request: IdempotentRequest, enqueue: () => Promise<EnqueueAnswer>): Promise<EnqueueAnswer & { replayed?: true }> {
    const key = this.redisKey(request.key);
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const reservation = JSON.stringify({ hash: request.bodyHash, reservation: randomUUID() });
      if ((await this.redis.set(key, reservation, 'PX', RESERVATION_MS, 'NX')) === 'OK') return this.answer(key, reservation, request.bodyHash, enqueue);
      const held = await this.read(key);
      // Freed between the two calls (its request failed, or its reservation lapsed): reserve it again.
      if (held === undefined && Date.now() < deadline) continue;
      if (held && held.hash !== request.bodyHash) throw reused();
      if (held && 'answer' in held) return { ...held.answer, replayed: true };
      if (Date.now() >= deadline) throw inProgress(this.waitMs);
      await sleep(POLL_MS);
    }
  }

  /** Enqueues for a reserved key and keeps the answer; frees the key if the enqueue fails. */
  private async answer(key: string, reservation: string, hash: string, enqueue: () => Promise<EnqueueAnswer>): Promise<EnqueueAnswer> {
    let answer: EnqueueAnswer;
    try {
      answer = await enqueue();
    } catch (err) {
      // The refusal is this request's answer only: the next one with the key tries again. The refusal stands whatever Redis says.
      await this.redis.eval(RELEASE, 1, key, reservation).catch(() => undefined);
      throw err;
    }
    await this.redis.eval(FINISH, 1, key, reservation, JSON.stringify({ hash, answer }), IDEMPOTENCY_TTL_MS);
    return answer;
  }

  private async read(key: string): Promise<z.output<typeof recordSchema> | undefined> {
    const value = await this.redis.get(key);
    if (value === null) return undefined;
    const record = storedRecord(value, recordSchema);
    if (!record) {
      throw new BatchScorerError('E_RUN_STATE', `the record of this Idempotency-Key in Redis (${key}) is not one this release wrote; send another key`);
    }
    return record;
  }
}

function reused(): BatchScorerError {
  return new BatchScorerError(
    'E_IDEMPOTENCY_KEY_REUSED',
    'this Idempotency-Key was sent within the last 24 hours with another submission; send a new key for a new submission',
  );
}

function inProgress(waitedMs: number): BatchScorerError {
  return new BatchScorerError(
    'E_IDEMPOTENCY_IN_PROGRESS',
    `another request with this Idempotency-Key is still being answered (waited ${waitedMs / 1000} s); send it again in a few seconds for its answer`,
  );
}
