import { type FindBaseline, namedBaseline, readBaseline, triggerPipeline } from '../scoring/index.js';
import type { Storage } from '../storage/index.js';
import type { PipelineRuns } from './pipeline-runs.js';

/** A pipeline's runs looked at, newest first, for one that succeeded: past them, the run has no baseline. */
export const RUNS_LOOKED_AT = 20;

/**
 * A run's baseline in queue mode: the run its options name (`baselineRun`), or else, for a run a
 * pipeline started, the pipeline's latest run enqueued before it that succeeded (or was accepted),
 * found through the pipeline's index of runs and read from its folder in the same --out. A
 * pipeline's first run has none.
 */
export function pipelineBaseline(storage: Storage, runs: PipelineRuns): FindBaseline {
  const named = namedBaseline(storage);
  return async (run, signal) => {
    const explicit = await named(run, signal);
    if (explicit !== null) return explicit;
    const pipeline = triggerPipeline(run.request.trigger);
    if (pipeline === undefined) return null;
    const ids = await runs.page(pipeline, 0, RUNS_LOOKED_AT + 1);
    const at = ids.indexOf(run.runId);
    for (const id of at === -1 ? ids : ids.slice(at + 1)) {
      const baseline = await readBaseline(storage, run, id, 'previous', signal);
      if (typeof baseline !== 'string') return baseline;
    }
    return null;
  };
}
