/**
 * Runs that clean up: `runs prune` deletes the finished run folders of batch-scorer below an
 * output prefix that the retention rule lets go, with what the queue keeps of them, and never a
 * folder that is not batch-scorer's, a run under way or held, or a pipeline's current baseline.
 */
export { pruneRuns, type PrunedFolder, type PruneQueue, type PruneReport, type PruneRequest } from './prune-runs.js';
export { ageText, type PruneReason, type PruneRule } from './prune-plan.js';
