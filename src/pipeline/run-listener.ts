import type { Logger } from '../log.js';
import type { Location } from '../storage/location.js';
import type { Manifest } from './manifest.js';
import type { RunRequest } from './run-request.js';

/** A run that starts: it has claimed its folder (or a queued run's first step has begun). */
export interface RunStart {
  runId: string;
  request: RunRequest;
  /** The run's folder, `<out>/<runId>/`. */
  folder: Location;
  /** When the run started (ISO 8601). */
  startedAt: string;
}

/**
 * Hears runs start and end, for what tells the world about them (webhooks, lineage): the
 * pipeline and the queue report through it and know nothing of what listens. A run is heard to
 * end once per outcome: `score` when it returns or fails, a queued run when its job completes or
 * fails for good (an attempt that BullMQ tries again is not an end). A run refused before it
 * started (a missing input, a usage error) may be heard to end without having been heard to
 * start. Calls must be cheap and must not throw: a listener does its work in the background,
 * and a listener that fails never fails or delays a run.
 */
export interface RunListener {
  runStarted(start: RunStart): void;
  /** The run ended: its manifest, as written into its folder (or as it would have been, where none could be). */
  runEnded(manifest: Manifest): void;
}

/**
 * One listener telling each of `listeners` in turn. A listener that throws all the same is logged
 * and passed over: the others are told, and the run's outcome stays what it was (a throw on the
 * success path would otherwise fail a run that succeeded).
 */
export function allListeners(listeners: readonly RunListener[], log: Logger): RunListener {
  const tell = (what: string, call: (l: RunListener) => void) => {
    for (const l of listeners) {
      try {
        call(l);
      } catch (err) {
        log.error({ err }, `a run listener failed on ${what}; the run goes on`);
      }
    }
  };
  return {
    runStarted: (start) => tell('a run start', (l) => l.runStarted(start)),
    runEnded: (manifest) => tell('a run end', (l) => l.runEnded(manifest)),
  };
}
