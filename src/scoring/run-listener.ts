import type { Logger } from '../log.js';
import type { Location } from '../storage/index.js';
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
  /** Which attempt of the run this is (see run-attempt.ts): each is heard to start once, and to end once. */
  attempt: number;
}

/**
 * Hears each attempt of a run start and end (see run-attempt.ts and run-lifecycle.ts), for what
 * tells the world about them (webhooks, lineage): the scoring core and the queue report through it and
 * know nothing of what listens. An attempt is heard to start once, when it has claimed the run's
 * folder, and to end once: `score` when it returns or fails, a queued run when its job completes
 * or fails for good (a job that BullMQ tries again is not an end), and a held run again when it
 * is accepted or rejected. A request refused before it claimed its folder (a missing input, a
 * usage error, a run id another run holds) is no run: it is heard neither to start nor to end.
 * Calls must be cheap and must not throw: a listener does its work in the background, and a
 * listener that fails never fails or delays a run.
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
