import { z } from 'zod';
import { BatchScorerError } from '../errors.js';
import { excerpt } from '../text-excerpt.js';
import { durationMs, type DurationUnit } from './duration.js';

/** The units a retention age is written in: seconds to weeks. */
const AGE_UNITS: readonly DurationUnit[] = ['s', 'm', 'h', 'd', 'w'];

/** What an age of retention must be (said after the flag, variable or key that held another). */
export const RETENTION_AGE_FORMAT = 'takes a duration such as 30d, 12h or 90m (a whole number of s, m, h, d or w)';

/**
 * The most finished jobs a queue may be set to keep of each end state (RETENTION_JOBS): each
 * pipeline's index of runs keeps twice as many (see PipelineRuns), so that it never loses a run
 * the queue still has.
 */
export const MAX_KEPT_JOBS = 5000;

/**
 * The fewest finished jobs a queue may be set to keep of each end state: runs finishing at once
 * must not take one another's end away from those following them (`enqueue --wait`, `status --watch`).
 */
export const MIN_KEPT_JOBS = 10;

/**
 * How long finished runs are kept, and how many. Unset, everything is kept as before: run folders
 * until `runs prune` is told otherwise, finished jobs as the queue's defaults say (see RETENTION in
 * src/queue/queues.ts).
 */
export interface RetentionSettings {
  /**
   * RETENTION_OLDER_THAN (`retention.olderThan`): `runs prune` deletes the finished runs that
   * ended longer ago than this, in ms (unless RETENTION_KEEP keeps them), and the queues remove
   * finished jobs past it if that is sooner than their defaults. Unset: no run goes by its age.
   */
  olderThanMs?: number;
  /**
   * RETENTION_KEEP (`retention.keep`): the newest finished runs of each pipeline that `runs prune`
   * keeps whatever their age, the runs no pipeline started counted as one more pipeline. Unset:
   * none is kept by count (with neither this nor olderThanMs, `runs prune` needs its flags).
   */
  keep?: number;
  /**
   * RETENTION_JOBS (`retention.jobs`): the finished jobs each queue (runs, segments) keeps of each
   * end state (completed, failed), newest first, MIN_KEPT_JOBS to MAX_KEPT_JOBS; the Redis keys a run keeps
   * beside its job go once its job is gone. Unset: the queue's defaults (1000 completed and 5000
   * failed run jobs, 20,000 of each of segment jobs).
   */
  jobs?: number;
}

/** A retention age (`30d`, `12h`, `90m`) in ms, or undefined for text that is none. */
export function retentionAge(text: string): number | undefined {
  return durationMs(text, AGE_UNITS);
}

/** `retention:` in `config/*.yaml`: as the variables take them (see RetentionSettings). */
export const retentionFileSchema = z
  .object({
    olderThan: z
      .string()
      .refine((text) => retentionAge(text) !== undefined, { message: RETENTION_AGE_FORMAT })
      .optional(),
    keep: z.int().min(0).optional(),
    jobs: z.int().min(MIN_KEPT_JOBS).max(MAX_KEPT_JOBS).optional(),
  })
  .strict();

/** RETENTION_OLDER_THAN, RETENTION_KEEP and RETENTION_JOBS, each winning over its key of `config/*.yaml`; a bad value is E_CONFIG naming it. */
export function retentionFromEnv(env: NodeJS.ProcessEnv, file: z.output<typeof retentionFileSchema> = {}): RetentionSettings {
  const olderThan = env.RETENTION_OLDER_THAN || undefined;
  const olderThanMs = olderThan === undefined ? undefined : retentionAge(olderThan);
  if (olderThan !== undefined && olderThanMs === undefined) {
    throw new BatchScorerError('E_CONFIG', `RETENTION_OLDER_THAN ${RETENTION_AGE_FORMAT}, got "${excerpt(olderThan, 64)}"`);
  }
  const keep = wholeNumber(env, 'RETENTION_KEEP', 0, Number.MAX_SAFE_INTEGER) ?? file.keep;
  const jobs = wholeNumber(env, 'RETENTION_JOBS', MIN_KEPT_JOBS, MAX_KEPT_JOBS) ?? file.jobs;
  const age = olderThanMs ?? (file.olderThan === undefined ? undefined : retentionAge(file.olderThan));
  return { ...(age !== undefined && { olderThanMs: age }), ...(keep !== undefined && { keep }), ...(jobs !== undefined && { jobs }) };
}

/** A variable holding a whole number from `min` to `max`, undefined when unset. */
function wholeNumber(env: NodeJS.ProcessEnv, name: 'RETENTION_KEEP' | 'RETENTION_JOBS', min: number, max: number): number | undefined {
  const text = env[name] || undefined;
  if (text === undefined) return undefined;
  if (!/^\d{1,16}$/.test(text) || Number(text) < min || Number(text) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of ${min} or more` : `from ${min} to ${max}`;
    throw new BatchScorerError('E_CONFIG', `${name} takes a whole number ${range}, got "${excerpt(text, 64)}"`);
  }
  return Number(text);
}
