/**
 * The run folders as the record of runs: RunIndex holds the runs whose folders are under
 * OUTPUT_ROOTS, and knownRuns merges them with the queue's, for `serve`'s run API and pages.
 */
export { knownRuns, type KnownRun, type KnownRuns } from './known-runs.js';
export { INDEX_REFRESH_MS, RunIndex, type RunIndexOptions } from './run-index.js';
