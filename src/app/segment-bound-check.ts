import pLimit from 'p-limit';
import { type Limits, parseRunInput, parseRunOptions, type RunOptionsInput } from '../config/index.js';
import type { Logger } from '../log.js';
import { checkSegments } from '../scoring/index.js';
import type { RunSubmission } from '../queue/index.js';
import type { Storage } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';

/** Submissions' segment checks that run at once in one `serve`; the others wait their turn. */
const CHECKS_AT_ONCE = 2;

/**
 * A submission's check against MAX_SEGMENTS before it is queued (see checkSegments): E_LIMIT
 * naming the smallest `segmentRows` when its input makes too many segments; an undecided count
 * is logged and the submission goes on, for the run's planning to refuse. Options it leaves out
 * are the workers' defaults (`runDefaults`: the config file's, MODEL_SERVICE_URL).
 */
export function segmentBoundCheck(storage: Storage, limits: Limits, runDefaults: RunOptionsInput, log: Logger): (submission: RunSubmission) => Promise<void> {
  // A check may plan for up to a dry run's bounds: a few at a time, so that submissions cannot take every core of serve.
  const gate = pLimit(CHECKS_AT_ONCE);
  return async (submission) => {
    const options = parseRunOptions({ ...runDefaults, ...submission.options }, 'options');
    const input = parseRunInput(submission.input);
    // A database input's rows are counted by its planning, which reads its key alone.
    if (input.kind === 'database') return;
    const check = await gate(() => checkSegments(storage, input.location, options, limits));
    if (!check.fits)
      log.info({ input: excerpt(submission.input), reason: check.undecided }, 'segments not counted before queuing: the run counts them as it plans');
  };
}
