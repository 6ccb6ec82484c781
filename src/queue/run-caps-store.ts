import type { Logger } from '../log.js';
import { type CapKind, type CapLimits, capped, type CapUsage, ExpiredError, type RunCaps } from '../scoring/index.js';
import type { RedisClient } from './queue-connection.js';
import { RETENTION } from './queues.js';

/** A run's caps hash is kept as long as its failed run job: a resume a month later still counts what it sent. */
const KEEP_SECONDS = RETENTION.runs.removeOnFail.age;

/**
 * Takes one predict attempt of ARGV[1] rows within the limits ARGV[2] (requests) and ARGV[3] (rows),
 * -1 for none, both counts or neither, unless the run has expired; an attempt past a limit is
 * refused and expires the run on that cap. Answers the cap the run expired on, or '' for an
 * attempt granted.
 */
const TAKE_SCRIPT = `
local expired = redis.call('hget', KEYS[1], 'expired')
if expired then return expired end
local rows, maxRequests, maxRows = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local counts = redis.call('hmget', KEYS[1], 'requests', 'rows')
local requests, sent = tonumber(counts[1] or '0'), tonumber(counts[2] or '0')
local kind = ''
if maxRequests >= 0 and requests + 1 > maxRequests then kind = 'max-requests'
elseif maxRows >= 0 and sent + rows > maxRows then kind = 'max-rows' end
if kind ~= '' then
  redis.call('hset', KEYS[1], 'expired', kind)
  return kind
end
redis.call('hincrby', KEYS[1], 'requests', 1)
redis.call('hincrby', KEYS[1], 'rows', rows)
redis.call('expire', KEYS[1], ARGV[4])
return ''
`;

const KINDS: readonly string[] = ['max-requests', 'max-rows', 'deadline'] satisfies CapKind[];

/** A run's caps hash, `<prefix>:caps:<runId>`. */
export const capsKey = (prefix: string, runId: string) => `${prefix}:caps:${runId}`;

/**
 * The caps of queued runs on Redis: `<prefix>:caps:<runId>`, a hash of the predict calls
 * (`requests`) and rows (`rows`) the run has sent, every worker, attempt and resume together, and
 * `expired`, the cap it stopped on, from the first take refused until a resume reopens it.
 */
export class RunCapsStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(runId: string): string {
    return capsKey(this.prefix, runId);
  }

  /** Takes one predict attempt of `rows` rows within the limits in one step; answers the cap the run expired on when refused. */
  async take(runId: string, rows: number, limits: Pick<CapLimits, 'maxRequests' | 'maxRows'>): Promise<CapKind | undefined> {
    const answer = (await this.redis.eval(TAKE_SCRIPT, 1, this.key(runId), rows, limits.maxRequests ?? -1, limits.maxRows ?? -1, KEEP_SECONDS)) as string;
    return answer === '' ? undefined : asKind(answer);
  }

  /** Marks the run expired on `kind`, unless it already is on another. */
  async expire(runId: string, kind: CapKind): Promise<void> {
    await this.redis.hsetnx(this.key(runId), 'expired', kind);
  }

  /** The cap the run stopped on, undefined while it has not. */
  async expired(runId: string): Promise<CapKind | undefined> {
    const kind = await this.redis.hget(this.key(runId), 'expired');
    return kind === null ? undefined : asKind(kind);
  }

  /** What the run has sent, all its attempts and resumes together. */
  async usage(runId: string): Promise<CapUsage> {
    const [requests, rows] = await this.redis.hmget(this.key(runId), 'requests', 'rows');
    return { requests: Number(requests ?? 0), rows: Number(rows ?? 0) };
  }

  /** A run started again (a resume, with caps of its own): no longer expired; what it sent stays counted. */
  async reopen(runId: string): Promise<void> {
    await this.redis.hdel(this.key(runId), 'expired');
  }
}

function asKind(text: string): CapKind {
  return (KINDS.includes(text) ? text : 'max-requests') as CapKind;
}

/**
 * A run's caps as one job sees them, shared with every worker through RunCapsStore: each take is
 * one script call, so no two workers take the last request. A run without caps only counts, and
 * does not wait for Redis to do it (a resume with caps counts on from there).
 */
export class RedisRunCaps implements RunCaps {
  private reached: CapKind | undefined;
  private readonly capped: boolean;

  constructor(
    private readonly store: RunCapsStore,
    private readonly runId: string,
    private readonly limits: CapLimits,
    private readonly log: Logger,
  ) {
    this.capped = capped(limits);
  }

  get expired(): CapKind | undefined {
    return this.reached;
  }

  async takeAttempt(rows: number): Promise<void> {
    if (this.reached) throw new ExpiredError(this.reached);
    if (!this.capped) {
      void this.store.take(this.runId, rows, {}).catch((err: unknown) => this.log.debug({ err }, 'could not count what the run sent'));
      return;
    }
    const { deadlineMs } = this.limits;
    if (deadlineMs !== undefined && Date.now() >= deadlineMs) {
      this.reached = 'deadline';
      await this.store.expire(this.runId, 'deadline');
      throw new ExpiredError('deadline');
    }
    const refused = await this.store.take(this.runId, rows, this.limits);
    if (refused) {
      this.reached = refused;
      throw new ExpiredError(refused);
    }
  }
}
