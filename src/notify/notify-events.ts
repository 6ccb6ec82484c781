import { z } from 'zod';
import { ENDING_STATES } from '../scoring/index.js';

/**
 * What a run's end is told as: the state it ended in (see run-lifecycle.ts: `succeeded`, `failed`,
 * `expired`, `cancelled`, `held`), and `drift` beside it when the run's drift check found its
 * predictions moved (level warn or fail).
 */
export const NOTIFY_EVENTS = [...ENDING_STATES, 'drift'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** Event names of earlier releases, accepted in `notify.on` until the next release: `completed` is `succeeded`. */
const FORMER_EVENT_NAMES: Readonly<Record<string, NotifyEvent>> = { completed: 'succeeded' };

/** An event as `notify.on` names it: one of NOTIFY_EVENTS, or a former name of one. */
export const notifyEventSchema = z
  .enum([...NOTIFY_EVENTS, ...(Object.keys(FORMER_EVENT_NAMES) as [string, ...string[]])])
  .transform((name): NotifyEvent => FORMER_EVENT_NAMES[name] ?? (name as NotifyEvent));

/**
 * The events of one run end, its state's first: a held run whose drift failed is
 * `['held', 'drift']`, told in one delivery (a receiver filtering on either hears it once).
 */
export function runEvents(end: { state: (typeof ENDING_STATES)[number]; drift: { level: string } | null }): NotifyEvent[] {
  const moved = end.drift?.level === 'warn' || end.drift?.level === 'fail';
  return [end.state, ...(moved ? (['drift'] as const) : [])];
}
