import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { LIMITS } from '../config/index.js';
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

/**
 * Lua: indexes a key (its hash, `member`) in the sorted set `keys` by the time Redis says (in ms,
 * after the newest), forgetting first what passed `horizon` ms ago (its key expired already),
 * then the oldest keys, deleted with their entries, until `max` are left; the key just indexed is
 * never one of them. The other keys are named from `base` and the member, on the prefix's hash
 * slot as KEYS are.
 */
const INDEX = `
local function index(keys, member, max, horizon, base)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', keys, '-inf', now - horizon)
  -- Strictly after the newest, so that keys written in the same millisecond keep their order.
  local newest = redis.call('ZRANGE', keys, -1, -1, 'WITHSCORES')[2]
  redis.call('ZADD', keys, newest and math.max(now, tonumber(newest) + 1) or now, member)
  redis.call('PEXPIRE', keys, horizon)
  local excess = redis.call('ZCARD', keys) - max
  if excess <= 0 then return end
  for _, old in ipairs(redis.call('ZRANGE', keys, 0, excess)) do
    if excess > 0 and old ~= member then
      redis.call('ZREM', keys, old)
      redis.call('DEL', base .. old)
      excess = excess - 1
    end
  end
end
`;

/** Reserves a key if it is free (SET NX, with its expiry) and indexes it; 1 when it did. */
const RESERVE = `${INDEX}
if not redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 0 end
index(KEYS[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6])
return 1
`;

/**
 * Replaces a key's value if it still holds this reservation (or nothing: it lapsed, or was
 * forgotten), with its expiry, and indexes it again from now; 1 when it did.
 */
const FINISH = `${INDEX}
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
index(KEYS[2], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7])
return 1
`;

/** Deletes a key, and its index entry, if it still holds this reservation. */
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('ZREM', KEYS[2], ARGV[2])
return redis.call('DEL', KEYS[1])
`;

/** How an IdempotencyKeys waits and how many keys it keeps. */
export interface IdempotencyKeysOptions {
  /** How long a request whose key another holds waits for that one's answer (IDEMPOTENCY_WAIT_MS by default). */
  waitMs?: number;
  /** Keys kept at most (MAX_IDEMPOTENCY_KEYS); past it, the oldest are forgotten first. */
  maxIdempotencyKeys?: number;
}

/**
 * `POST /runs`'s Idempotency-Keys: `<prefix>:idempotency:<sha256 of the key>`, one per key for the
 * deployment (the API knows no callers apart: one API_TOKEN), holding the first answer for
 * IDEMPOTENCY_TTL_MS. A key is reserved (SET NX) before its submission is enqueued, so that of
 * requests arriving at once only one enqueues; the others wait for its answer. A failed enqueue
 * frees the key: only answers are kept, never errors. Keys are bounded in count too: each is
 * indexed by time in `<prefix>:idempotency-keys` (a sorted set) in the script that writes it, and
 * past `maxIdempotencyKeys` the oldest are deleted there, as if their day had passed.
 */
export class IdempotencyKeys {
  private readonly waitMs: number;
  private readonly maxKeys: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    options: IdempotencyKeysOptions = {},
  ) {
    this.waitMs = options.waitMs ?? IDEMPOTENCY_WAIT_MS;
    this.maxKeys = options.maxIdempotencyKeys ?? LIMITS.idempotencyKeys.default;
  }

  /** The Redis key of an Idempotency-Key: hashed, so a key of any characters is one bounded Redis key on the prefix's slot. */
  redisKey(key: string): string {
    return `${this.base}${keyHash(key)}`;
  }

  /** The sorted set indexing the keys by the time they were written (see INDEX). */
  get indexKey(): string {
    return `${this.prefix}:idempotency-keys`;
  }

  /** What each key's name starts with; its hash follows. */
  private get base(): string {
    return `${this.prefix}:idempotency:`;
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
      const reserved = await this.redis.eval(RESERVE, 2, key, this.indexKey, reservation, RESERVATION_MS, ...this.indexArgs(request.key));
      if (reserved === 1) return this.answer(request.key, reservation, request.bodyHash, enqueue);
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
  private async answer(sent: string, reservation: string, hash: string, enqueue: () => Promise<EnqueueAnswer>): Promise<EnqueueAnswer> {
    const key = this.redisKey(sent);
    let answer: EnqueueAnswer;
    try {
      answer = await enqueue();
    } catch (err) {
      // The refusal is this request's answer only: the next one with the key tries again. The refusal stands whatever Redis says.
      await this.redis.eval(RELEASE, 2, key, this.indexKey, reservation, keyHash(sent)).catch(() => undefined);
      throw err;
    }
    await this.redis.eval(FINISH, 2, key, this.indexKey, reservation, JSON.stringify({ hash, answer }), IDEMPOTENCY_TTL_MS, ...this.indexArgs(sent));
    return answer;
  }

  /** INDEX's arguments for a key: its hash, the keys kept at most, how long an entry may outlive its key's writing, and the keys' base. */
  private indexArgs(sent: string): [string, number, number, string] {
    return [keyHash(sent), this.maxKeys, IDEMPOTENCY_TTL_MS + RESERVATION_MS, this.base];
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

/** An Idempotency-Key's sha256, in hex: its Redis key's last part, and its entry in the index. */
function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
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
