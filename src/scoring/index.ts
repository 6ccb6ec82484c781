/**
 * The scoring core: plan a run, score its segments, assemble and finish it, and the records a run
 * folder keeps. Knows no queue, HTTP or command line (test/unit/import-graph.test.ts).
 */

// A run in one process, and the stages the queue's worker runs apart: prepare (plan), one segment, finish.
export { scoreRun, type RunStage } from './score-run.js';
export { newRunId, prepareRun } from './prepare-run.js';
export { loadPreparedRun, readPreparedRun, runFiles, type PreparedRun } from './prepared-run.js';
export { scoreSegment } from './score-segment.js';
export { finishRun, NOT_THIS_RUNS, recordFailure } from './finish-run.js';
export { preflight } from './preflight.js';
export { checkTableOptions } from './table-options.js';
// A finished run's quarantined rows sent again, into a new version of its outputs.
export { rescoreRun, type RescoreRequest } from './rescore.js';
export { ReadAhead } from './read-ahead.js';
export type { OwnPredictor, PredictorFactory } from './predictor.js';

// Segments: their count checked before a run is queued, their done-marks and counts.
export { checkSegments } from './segment-check.js';
export { readSegmentDone, readSegmentsDone, unfinished } from './segment-done.js';
export { sumCounts } from './segment-counts.js';

// Dry runs (`--dry-run`, `--estimate`) and their bounds.
export { dryRun, dryRunReportSchema, type DryRunReport } from './dry-run.js';
export { dryRunBounds } from './work-bounds.js';

// A run's caps and error allowance.
export {
  CAP_FLAGS,
  capLimit,
  capLimits,
  capped,
  cappedPredictor,
  ExpiredError,
  expiredRun,
  type CapKind,
  type CapLimits,
  type CapUsage,
  type RunCaps,
} from './run-caps.js';
export { errorRateExceeded, quarantineAllowance, type ErrorAllowance } from './error-allowance.js';

// A run's states, request, trigger, progress and result.
export {
  ENDING_STATES,
  FORMER_STATE_NAMES,
  isResumable,
  isSettled,
  requireNext,
  RUN_STATES,
  runStateSchema,
  stateNamed,
  type RunState,
} from './run-lifecycle.js';
export { requestDifference, sameRequest, withNeutralOptions, type RunRequest } from './run-request.js';
export { describeTrigger, runTriggerSchema, triggerPipeline, type ObjectVersion, type RunTrigger } from './run-trigger.js';
export { computeProgress, PROGRESS_EVERY_MS, type RunProgress } from './progress.js';
export { capNote, describeResult, resultNotes, rowsPerSecond, runResult, runResultSchema, shownRate, type RunResult } from './run-result.js';
export { resumeCanHelp } from './resume-advice.js';

// The run folder's records: manifest, run file, open attempt, claim, describe snapshot.
export { manifestSchema, readManifest, succeededManifestSchema, type Manifest, type ManifestParts } from './manifest.js';
export { readRunFile, requireRunFile, writeRunFile } from './run-file.js';
export { openAttempt, readOpenAttempt, type OpenAttempt } from './run-attempt.js';
export { checkRunFolder, ownsRunFolder, readClaim, readClaimedRequest, refusedWhilePlanning } from './run-folder-claim.js';
export { describeSnapshotSchema, type DescribeSnapshot } from './describe-snapshot.js';

// Who hears a run: its listeners (lineage, webhooks) and its observer (metrics).
export { allListeners, type RunListener, type RunStart } from './run-listener.js';
export type { PredictOutcome, ScoringObserver, SegmentOutcome } from './scoring-observer.js';

// Drift, the held run's judgement, and comparing runs and models.
export type { Drift } from './drift.js';
export { namedBaseline, readBaseline, type FindBaseline } from './drift-baseline.js';
export { judgeRun, JUDGEMENT_WHY_CHARS, type JudgedRun, type Verdict } from './judge-run.js';
export { compareRuns, type RunComparison } from './compare-runs.js';
export { comparisonSchema, type Comparison } from './model-comparison.js';
export type { NumericSummary, PredictionProfile } from './prediction-profile.js';
