import { errorSpec, type ErrorCode } from '../errors.js';
import { endingState, isResumable } from './run-lifecycle.js';

/**
 * Failures a resume meets again whatever it keeps: the input is malformed, or it or the model
 * changed under the run (a new run id is the way on).
 */
const MET_AGAIN: readonly ErrorCode[] = ['E_INPUT', 'E_INPUT_CHANGED', 'E_MODEL_CHANGED'];

/**
 * Refusals of something outside the command, fixed where it is: a planned run the database
 * refused at its end (a table altered, a permission revoked; see --out-table) resumes with its
 * rows scored once that is fixed.
 */
const FIXED_OUTSIDE: readonly ErrorCode[] = ['E_DATABASE_REFUSED'];

/**
 * Whether resuming a failed run (the same command again, under its run id) can end otherwise than
 * it did, from the catalogue and how far the run got: yes when the failure may pass (retriable:
 * an overloaded or unreachable service, a storage hiccup, a signal), and for a run that was
 * planned, when it failed on something other than its request (exit 1: its error threshold, with a
 * higher --max-error-rate; a cancel; a service fault), save MET_AGAIN, or on a refusal FIXED_OUTSIDE. Never for a refusal (exit
 * 2: the command or configuration must change, as an unknown model, a missing input, a run id
 * taken by another request), nor for a run that never made its plan and failed for good.
 */
export function resumeCanHelp(code: ErrorCode, planned: boolean): boolean {
  // A held run is judged, not resumed (see run-lifecycle.ts).
  if (!isResumable(endingState(code))) return false;
  const spec = errorSpec(code);
  if (spec.retriable) return true;
  return planned && ((spec.exit === 1 && !MET_AGAIN.includes(code)) || FIXED_OUTSIDE.includes(code));
}
