import { z } from 'zod';
import { BatchScorerError } from '../errors.js';

/**
 * A run's states, the same in both modes (`score` and queued runs) and in every view (CLI, API,
 * pages, metrics, webhooks, lineage):
 *
 *     queued → running → (cancelling) → succeeded | failed | cancelled | expired | held
 *
 * `queued`: waiting for a worker (or backing off before a retry); `running`: planning, scoring or
 * assembling; `cancelling`: cancelled while some of its jobs still run (they stop within about a
 * second); `succeeded`: its outputs are whole and `_SUCCESS` written; `failed`; `cancelled`;
 * `expired`: stopped on a cap (--max-requests, --max-rows, --deadline); `held`: its outputs are
 * written but a gate (its drift, past --drift-fail) holds back `_SUCCESS` until someone accepts it
 * (then `succeeded`, recording who, when and why) or rejects it (then `failed`, for good).
 */
export const RUN_STATES = ['queued', 'running', 'cancelling', 'held', 'succeeded', 'failed', 'cancelled', 'expired'] as const;
export type RunState = (typeof RUN_STATES)[number];
export const runStateSchema = z.enum(RUN_STATES);

/** The states an attempt of a run ends in, which its manifest records. */
export const ENDING_STATES = ['succeeded', 'failed', 'cancelled', 'expired', 'held'] as const satisfies readonly RunState[];
export type EndingState = (typeof ENDING_STATES)[number];
export const endingStateSchema = z.enum(ENDING_STATES);

/** What moves a run from one state to another (see nextState). */
export const RUN_EVENTS = ['start', 'cancel', 'stop', 'succeed', 'fail', 'expire', 'hold', 'accept', 'reject', 'resume'] as const;
export type RunEvent = (typeof RUN_EVENTS)[number];

/**
 * Every move a run may make. A cancel reaching a run whose assembly is under way does not cut it
 * (a half-written `_SUCCESS` must never stand beside a run said cancelled): a `cancelling` run may
 * still end as its assembly decides. A run held by its gate is neither resumed (scoring it again
 * meets the same gate) nor cancelled: it is accepted or rejected.
 */
const TRANSITIONS: Readonly<Record<RunState, Partial<Record<RunEvent, RunState>>>> = {
  queued: { start: 'running', cancel: 'cancelled' },
  running: { cancel: 'cancelling', succeed: 'succeeded', fail: 'failed', expire: 'expired', hold: 'held' },
  cancelling: { stop: 'cancelled', succeed: 'succeeded', fail: 'failed', expire: 'expired', hold: 'held' },
  held: { accept: 'succeeded', reject: 'failed' },
  succeeded: {},
  failed: { resume: 'queued' },
  cancelled: { resume: 'queued' },
  expired: { resume: 'queued' },
};

/** The state `event` moves a run in `from` to; undefined where the event has no place there. */
export function nextState(from: RunState, event: RunEvent): RunState | undefined {
  return TRANSITIONS[from][event];
}

/** The state `event` moves the run to, or E_RUN_CONFLICT naming the run, its state and what was asked. */
export function requireNext(runId: string, from: RunState, event: RunEvent, asked: string): RunState {
  const to = nextState(from, event);
  if (to === undefined) throw new BatchScorerError('E_RUN_CONFLICT', `run ${runId} ${STATE_PHRASES[from]}; it cannot be ${asked}${conflictAdvice(from)}`);
  return to;
}

/** Each state as a sentence says a run is in it. */
const STATE_PHRASES: Readonly<Record<RunState, string>> = {
  queued: 'is queued',
  running: 'is running',
  cancelling: 'is cancelling',
  held: 'is held',
  succeeded: 'has succeeded',
  failed: 'has failed',
  cancelled: 'was cancelled',
  expired: 'has expired',
};

/** What a person can do with a run in `state` instead. */
function conflictAdvice(state: RunState): string {
  switch (state) {
    case 'held':
      return ': it waits for batch-scorer accept or reject';
    case 'cancelling':
      return ': its jobs are still stopping, within seconds';
    case 'failed':
    case 'cancelled':
    case 'expired':
      return ': it can be resumed';
    default:
      return '';
  }
}

/** A run that goes no further by itself: ended, or held for someone's judgement. */
export function isSettled(state: RunState): boolean {
  return state !== 'queued' && state !== 'running' && state !== 'cancelling';
}

/** A run a resume takes further: failed, cancelled or expired. */
export function isResumable(state: RunState): boolean {
  return nextState(state, 'resume') !== undefined;
}

/**
 * The state an attempt ends in, from the code of the error it ended with (none: it succeeded).
 * The only place an error code becomes a state: views read the state, never a code or a message.
 */
export function endingState(code: string | undefined): EndingState {
  if (code === undefined) return 'succeeded';
  return ENDED_ON[code] ?? 'failed';
}

/** The codes that end a run otherwise than failed. */
const ENDED_ON: Readonly<Record<string, EndingState>> = { E_CANCELLED: 'cancelled', E_EXPIRED: 'expired', E_DRIFT: 'held' };

/** The event that ends an attempt in `state`. */
export function endingEvent(state: EndingState): RunEvent {
  return ({ succeeded: 'succeed', failed: 'fail', cancelled: 'stop', expired: 'expire', held: 'hold' } as const)[state];
}

/**
 * Names of states the API answered before this release, accepted as filters for one more
 * release: `completed` (now `succeeded`), `waiting` (`queued`), `active` (`running`).
 */
export const FORMER_STATE_NAMES: Readonly<Record<string, RunState>> = { completed: 'succeeded', waiting: 'queued', active: 'running' };

/** A state asked for by name, former names included (see FORMER_STATE_NAMES); undefined for none of them. */
export function stateNamed(name: string): RunState | undefined {
  return (RUN_STATES as readonly string[]).includes(name) ? (name as RunState) : FORMER_STATE_NAMES[name];
}
