import { setTimeout as sleep } from 'node:timers/promises';
import { errorCode, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { RunQueue } from '../queue/index.js';
import { type ListedFile, parseLocation, type Storage, versionTag } from '../storage/index.js';
import { fileDropSubmission, objectVersion, watches } from './file-drop.js';
import type { FileDropPipeline } from './pipelines.js';

/** Files whose claims are looked up in one round trip: a ListObjectsV2 page. */
const BATCH = 1_000;

/** What a poll needs: the pipelines to poll for, the storage to list, the queue that claims and enqueues, a logger. */
export interface DropPollerDeps {
  /** The file-drop pipelines of `jobs/*.yaml`; those sharing a prefix share its listing. */
  pipelines: readonly FileDropPipeline[];
  storage: Storage;
  /** Where runs are enqueued and file versions claimed (the memory of every watcher). */
  runs: Pick<RunQueue, 'enqueueFileDrop' | 'fileDropClaims'>;
  log: Logger;
}

/** What one pass found: the runs it enqueued, and the prefixes it could not list, or files of them it could not start. */
export interface PollPass {
  started: { runId: string; pipeline: string; location: string }[];
  /** A prefix that could not be listed, or (with `location`) one of its files that could not be enqueued. */
  failed: { prefix: string; location?: string; error: string; code: string }[];
}

/**
 * One pass of `watch`: lists each watched prefix (every page), keeps the files each pipeline
 * watches, and starts a run for each file version no claim covers yet (see
 * RunQueue.enqueueFileDrop), so that whatever an event or another watcher started is not
 * started again. It keeps nothing itself: the claims in Redis are its memory. A prefix that
 * cannot be listed (bucket missing, S3 down) is reported and the others are still polled.
 */
export async function pollDrops(deps: DropPollerDeps, signal?: AbortSignal): Promise<PollPass> {
  const pass: PollPass = { started: [], failed: [] };
  // Pipelines watching the same prefix share its listing.
  const byPrefix = new Map<string, FileDropPipeline[]>();
  for (const p of deps.pipelines) byPrefix.set(p.trigger.prefix, [...(byPrefix.get(p.trigger.prefix) ?? []), p]);
  for (const [prefix, pipelines] of byPrefix) {
    signal?.throwIfAborted();
    try {
      let batch: ListedFile[] = [];
      for await (const file of deps.storage.list(parseLocation(prefix), signal)) {
        batch.push(file);
        if (batch.length < BATCH) continue;
        await startNew(deps, pipelines, batch, pass);
        batch = [];
      }
      await startNew(deps, pipelines, batch, pass);
    } catch (err) {
      if (signal?.aborted) throw err;
      pass.failed.push({ prefix, error: errorMessage(err), code: errorCode(err) });
      deps.log.warn({ prefix, err, code: errorCode(err) }, 'watch: polling this prefix failed; trying again at the next interval');
    }
  }
  return pass;
}

/** Starts the runs of the files of one listing batch that each pipeline watches and has not claimed yet. */
async function startNew(deps: DropPollerDeps, pipelines: readonly FileDropPipeline[], files: readonly ListedFile[], pass: PollPass): Promise<void> {
  const foundAt = new Date();
  for (const pipeline of pipelines) {
    // An object listed mid-write has no version to name yet (s3rver lists it with an empty ETag):
    // a run for it would find another version and fail, so it waits for a later pass.
    const watched = files.flatMap((f) => {
      const tag = versionTag(f);
      return watches(pipeline, f.location) && tag !== '' ? [{ mtimeMs: f.mtimeMs, object: objectVersion(f.location, tag, { size: f.size }) }] : [];
    });
    const objects = watched.map((w) => w.object);
    const claims = await deps.runs.fileDropClaims(pipeline.name, objects);
    for (const [i, object] of objects.entries()) {
      if (claims[i]?.enqueued) continue;
      const { mtimeMs } = watched[i];
      const modified = mtimeMs === undefined ? foundAt : new Date(mtimeMs);
      const trigger = { kind: 'poll' as const, pipeline: pipeline.name, object, foundAt: foundAt.toISOString() };
      let started;
      try {
        started = await deps.runs.enqueueFileDrop(fileDropSubmission(pipeline, trigger, modified));
      } catch (err) {
        // One file that cannot be enqueued (a damaged claim, say) must not hide the files after it.
        if (errorCode(err) === 'E_REDIS_UNAVAILABLE') throw err;
        pass.failed.push({ prefix: pipeline.trigger.prefix, location: object.location, error: errorMessage(err), code: errorCode(err) });
        deps.log.warn(
          { pipeline: pipeline.name, location: object.location, err, code: errorCode(err) },
          'watch: could not start this file; trying again at the next interval',
        );
        continue;
      }
      const { runId, created } = started;
      if (!created) continue; // enqueued meanwhile by an event or another watcher
      pass.started.push({ runId, pipeline: pipeline.name, location: object.location });
      deps.log.info({ runId, pipeline: pipeline.name, location: object.location, etag: object.etag }, 'watch: file found; run enqueued');
    }
  }
}

/**
 * `watch`'s loop: a pass every `intervalMs` (counted from the start of the one before, or from
 * its end when a pass takes longer) until `signal` aborts. A pass whose prefixes fail is logged
 * and the next one tries again.
 */
export async function watchDrops(deps: DropPollerDeps, intervalMs: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const started = Date.now();
    try {
      await pollDrops(deps, signal);
    } catch (err) {
      if (signal.aborted) return;
      throw err;
    }
    await sleep(Math.max(0, started + intervalMs - Date.now()), undefined, { signal }).catch(() => undefined);
  }
}
