import { z } from 'zod';

/**
 * What a run's end is told as: its state (`completed` for a run that succeeded), and `drift`
 * beside it when the run's drift check found its predictions moved (level warn or fail).
 */
export const NOTIFY_EVENTS = ['completed', 'failed', 'expired', 'cancelled', 'drift'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];
export const notifyEventSchema = z.enum(NOTIFY_EVENTS);

/** The event of each end state; a state this release does not know is told as a failure. */
const STATE_EVENTS: Readonly<Record<string, NotifyEvent>> = { succeeded: 'completed', failed: 'failed', expired: 'expired', cancelled: 'cancelled' };

/**
 * The events of one run end, its state's first: a run that failed on its drift is
 * `['failed', 'drift']`, told in one delivery (a receiver filtering on either hears it once).
 */
export function runEvents(end: { state: string; drift: { level: string } | null }): NotifyEvent[] {
  const moved = end.drift?.level === 'warn' || end.drift?.level === 'fail';
  return [STATE_EVENTS[end.state] ?? 'failed', ...(moved ? (['drift'] as const) : [])];
}
