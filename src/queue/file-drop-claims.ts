import type { RedisClient } from './queue-connection.js';
import { z } from 'zod';
import { BatchScorerError } from '../errors.js';
import { storedRecord } from './stored-record.js';

/**
 * A file version's claim: the run it starts, and whether that run was enqueued. `enqueued: false`
 * is a claim whose enqueue has not been seen to succeed (a crash in between): the next sighting
 * of the file enqueues the same run id again.
 */
const claimSchema = z.object({ runId: z.string(), enqueued: z.boolean() });
export type FileDropClaim = z.output<typeof claimSchema>;

/** Sets a claim enqueued unless it is already (HGET then HSET, atomic in Redis); 1 when it set it. */
const MARK_ENQUEUED = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then
  local ok, claim = pcall(cjson.decode, current)
  if ok and type(claim) == 'table' and claim.enqueued == true then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/**
 * Which file versions each file-drop pipeline has started a run for: the hash
 * `<prefix>:file-drops:<pipeline>`, field `<location>\n<etag>`, value a FileDropClaim as JSON.
 * The memory of `serve`'s event intake and of every `watch` process alike, so whichever sees a
 * file first starts its run and the others find it claimed. Kept without expiry: it must outlive
 * BullMQ's retention of the run job, or an old file seen by a later poll would run again.
 */
export class FileDropClaims {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(pipeline: string): string {
    return `${this.prefix}:file-drops:${pipeline}`;
  }

  /** The claims of these file versions of one pipeline (undefined where none), in one round trip. */
  async lookup(pipeline: string, versions: readonly string[]): Promise<(FileDropClaim | undefined)[]> {
    if (versions.length === 0) return [];
    const values = await this.redis.hmget(this.key(pipeline), ...versions);
    return values.map((value, i) => (value === null ? undefined : this.parse(value, pipeline, versions[i])));
  }

  /** Claims the version for `runId` unless it is claimed already; answers the claim that stands. */
  async claim(pipeline: string, version: string, runId: string): Promise<FileDropClaim> {
    const key = this.key(pipeline);
    const candidate: FileDropClaim = { runId, enqueued: false };
    await this.redis.hsetnx(key, version, JSON.stringify(candidate));
    const [winner] = await this.lookup(pipeline, [version]);
    // Claims are never removed, so the one just made or found is there.
    return winner ?? candidate;
  }

  /**
   * Records that the claimed run is on the queue. Answers whether this call did (the claim was
   * still pending): of the processes that enqueued the same run at once, one only is told so.
   */
  async enqueued(pipeline: string, version: string, runId: string): Promise<boolean> {
    const done: FileDropClaim = { runId, enqueued: true };
    return (await this.redis.eval(MARK_ENQUEUED, 1, this.key(pipeline), version, JSON.stringify(done))) === 1;
  }

  private parse(value: string, pipeline: string, version: string): FileDropClaim {
    const claim = storedRecord(value, claimSchema);
    if (!claim) {
      throw new BatchScorerError(
        'E_RUN_STATE',
        `the claim of ${version.replace('\n', ' ETag ')} in ${this.key(pipeline)} is not one this release wrote (${value.slice(0, 100)}); delete that field to let the file run again`,
      );
    }
    return claim;
  }
}

/** The field a file version is claimed under: its location and ETag. */
export function fileVersionField(location: string, etag: string): string {
  return `${location}\n${etag}`;
}
