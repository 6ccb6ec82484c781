import { checkRun, outDatabaseOf, type DeploymentPolicy } from '../config/index.js';
import { runNotFound, type RunQueueCalls, type RunSubmission } from '../queue/index.js';

/**
 * Refuses (E_NOT_ALLOWED) a submission whose input, output or service the policy does not allow.
 * A submission naming no service runs against the worker's own, which is always allowed.
 */
export function checkSubmission(policy: DeploymentPolicy, submission: RunSubmission): Promise<void> {
  const { input, out, options = {} } = submission;
  return checkRun(policy, { input, out, service: options.service, outDatabase: outDatabaseOf(input, options) });
}

/**
 * A run queue's calls with the deployment policy checked before anything reaches the queue: a run
 * submitted, started by a file drop, or resumed (whose stored request is checked again: the
 * policy may have changed since, and job data may have been written by any producer). A run
 * submitted must then pass `bounds` (the deployment's bounds on it, e.g. MAX_SEGMENTS), which may
 * read its input: only once the policy allows it.
 */
export function policedRuns(runs: RunQueueCalls, policy: DeploymentPolicy, bounds?: (submission: RunSubmission) => Promise<void>): RunQueueCalls {
  return {
    enqueue: async (submission, options) => {
      await checkSubmission(policy, submission);
      await bounds?.(submission);
      return runs.enqueue(submission, options);
    },
    enqueueFileDrop: async (submission) => {
      await checkSubmission(policy, submission);
      return runs.enqueueFileDrop(submission);
    },
    get: (runId) => runs.get(runId),
    list: (options) => runs.list(options),
    cancel: (runId) => runs.cancel(runId),
    judged: (manifest) => runs.judged(manifest),
    resume: async (runId, caps) => {
      const run = await runs.get(runId);
      if (!run) throw runNotFound(runId);
      await checkSubmission(policy, run);
      return runs.resume(runId, caps);
    },
  };
}
