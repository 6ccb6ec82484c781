import { z } from 'zod';
import type { Location, Storage } from '../storage/index.js';
import { readManifest, type Manifest } from './manifest.js';
import { runFiles } from './prepared-run.js';
import { readRunFile, writeRunFile } from './run-file.js';

/** `_work/attempt.json`: the attempt of the run under way, and when it began. */
const attemptSchema = z.object({ attempt: z.int().min(1), startedAt: z.string() });
export type OpenAttempt = z.output<typeof attemptSchema> & {
  /** True when this call began the attempt; false when it goes on with one begun before (a crash, a job tried again). */
  opened: boolean;
};

/**
 * Opens the run's attempt, once the run has claimed its folder. An attempt is a run's start and
 * its end (each is one OpenLineage run, for one): the first start is attempt 1, each resume of an
 * ended run one more. An attempt under way whose process crashed, or whose queued job BullMQ takes
 * again, goes on as the same attempt: it is ended only when a manifest records it.
 */
export async function openAttempt(storage: Storage, folder: Location, startedAt: string, signal?: AbortSignal): Promise<OpenAttempt> {
  const [open, manifest] = await Promise.all([readOpenAttempt(storage, folder, signal), readManifest(storage, folder, signal)]);
  const recorded = recordedAttempt(manifest);
  if (open && open.attempt > recorded) return { ...open, opened: false };
  const attempt = { attempt: Math.max(open?.attempt ?? 0, recorded) + 1, startedAt };
  await writeRunFile(storage, runFiles.attempt(folder), attempt, { signal });
  return { ...attempt, opened: true };
}

/**
 * The attempt open in a run folder, opened and not yet ended by a manifest (see openAttempt); 0
 * when none is: the last one ended (a run resumed on the queue and cancelled before a worker took
 * it began none). A folder with neither file (one an earlier release claimed) is taken as in its
 * first attempt.
 */
export async function openAttemptNumber(storage: Storage, folder: Location, signal?: AbortSignal): Promise<number> {
  const [open, manifest] = await Promise.all([
    readOpenAttempt(storage, folder, signal).catch(() => undefined),
    readManifest(storage, folder, signal).catch(() => undefined),
  ]);
  const recorded = recordedAttempt(manifest);
  if (open) return open.attempt > recorded ? open.attempt : 0;
  return manifest ? 0 : 1;
}

/** The last attempt a manifest records (1 in manifests of releases that kept none); 0 without a manifest. */
function recordedAttempt(manifest: Manifest | undefined): number {
  return manifest ? (manifest.attempt ?? 1) : 0;
}

/** The folder's `_work/attempt.json`: the last attempt opened and when it began; undefined where none was. */
export function readOpenAttempt(storage: Storage, folder: Location, signal?: AbortSignal): Promise<z.output<typeof attemptSchema> | undefined> {
  return readRunFile(storage, runFiles.attempt(folder), attemptSchema, signal);
}
