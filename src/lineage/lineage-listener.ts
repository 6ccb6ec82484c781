import type { Logger } from '../log.js';
import type { RunListener } from '../scoring/index.js';
import { LineageSender } from './lineage-sender.js';
import type { LineageSettings } from '../config/index.js';
import { endEvent, startEvent, type RunEvent } from './run-event.js';

/** How long `score` waits at its exit, after printing the run's result, for its lineage events still in flight. */
export const LINEAGE_DRAIN_MS = 5_000;

/** A RunListener that tells the lineage server; `drain` waits (boundedly) for what it sent. */
export interface LineageListener extends RunListener {
  drain(ms?: number): Promise<void>;
}

/**
 * OpenLineage run events for the runs of this process, one OpenLineage run per attempt (START,
 * then COMPLETE, FAIL or ABORT; OTHER for a held attempt, whose end comes from whoever judges
 * it), sent in the background; without settings (OPENLINEAGE_URL unset) it hears runs and sends
 * nothing.
 */
export function lineageListener(settings: LineageSettings | undefined, log: Logger): LineageListener {
  if (!settings) return { runStarted: () => undefined, runEnded: () => undefined, drain: () => Promise.resolve() };
  const sender = new LineageSender(settings, log);
  // A listener must not throw: an event that cannot be made is a warning, the run goes on.
  const send = (make: () => RunEvent | undefined) => {
    try {
      const event = make();
      if (event) sender.send(event);
    } catch (err) {
      log.warn({ err }, 'could not make a lineage event');
    }
  };
  return {
    runStarted: (start) => send(() => startEvent(start, settings)),
    runEnded: (manifest) => send(() => endEvent(manifest, settings)),
    drain: (ms = LINEAGE_DRAIN_MS) => sender.drain(ms),
  };
}
