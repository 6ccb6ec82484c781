import { type Manifest, type RunState, triggerPipeline } from '../scoring/index.js';
import type { RunFolder } from './run-folders.js';

/**
 * Which finished runs go. A run is kept while it ended within `olderThanMs`, or is among the
 * `keep` newest finished runs of its pipeline (the runs no pipeline started counted as one more);
 * with both, it goes once neither keeps it. At least one of them is set.
 */
export interface PruneRule {
  /** Finished runs that ended longer ago than this (ms) may go. */
  olderThanMs?: number;
  /** The newest finished runs of each pipeline kept whatever their age. */
  keep?: number;
}

/** Why a folder stays (or, for `old`, why it goes). */
export type PruneReason =
  | 'foreign'
  | 'unreadable'
  | 'unfinished'
  | 'resumed'
  | 'live'
  | 'held'
  | 'baseline'
  | 'newest'
  | 'young'
  /** It goes: finished, past the rule. */
  | 'old';

/** What becomes of one folder below `--out`, and why, in a sentence. */
export interface Verdict {
  found: RunFolder;
  reason: PruneReason;
  why: string;
}

/** What the plan knows besides the folders: the queue's view of the runs, the baselines named elsewhere, and the time. */
export interface PlanFacts {
  /** The state the queue has each run in; absent for a run the queue has no job of (or with no queue asked). */
  queued: ReadonlyMap<string, RunState>;
  /** Run ids named as `baselineRun` by the pipelines of the jobs folder: each is some pipeline's current baseline. */
  namedBaselines: ReadonlySet<string>;
  now: number;
}

/** The states in which the queue still works on a run, whatever its folder says. */
const LIVE: ReadonlySet<RunState> = new Set(['queued', 'running', 'cancelling']);

/**
 * Decides each folder: only a finished run of batch-scorer goes, and never one the queue still has
 * queued, running or cancelling, one held by its drift gate, a pipeline's current drift baseline
 * (its newest run that succeeded with a profile, what its next run is compared with, see
 * pipelineBaseline; or the run its pipeline names as `baselineRun`), or one the rule keeps.
 */
export function planPrune(folders: readonly RunFolder[], rule: PruneRule, facts: PlanFacts): Verdict[] {
  const finished = folders
    .flatMap((f) => (f.standing.kind === 'finished' ? [{ found: f, manifest: f.standing.manifest }] : []))
    .sort((a, b) => newestFirst(a.manifest, b.manifest));
  const baselines = currentBaselines(finished, facts.namedBaselines);
  const rank = new Map<string, number>();
  const counted = new Map<string, number>();
  for (const { found, manifest } of finished) {
    const group = pipelineOf(manifest) ?? '';
    rank.set(found.name, counted.get(group) ?? 0);
    counted.set(group, (counted.get(group) ?? 0) + 1);
  }
  return folders.map((found) => {
    const { standing } = found;
    switch (standing.kind) {
      case 'foreign':
      case 'unreadable':
        return { found, reason: standing.kind, why: standing.why };
      case 'unfinished':
        return {
          found,
          reason: 'unfinished',
          why: 'no manifest.json: its run is under way, or stopped before it ended (resume it, or delete the folder by hand)',
        };
      case 'resumed':
        return { found, reason: 'resumed', why: `resumed since its manifest was written: attempt ${standing.attempt} is under way` };
      case 'finished':
        return judge(found, standing.manifest, { rule, facts, baseline: baselines.get(found.name), rank: rank.get(found.name) ?? 0 });
    }
  });
}

/** A finished run's verdict: kept for the first reason that holds, else gone. */
function judge(
  found: RunFolder,
  manifest: Manifest,
  { rule, facts, baseline, rank }: { rule: PruneRule; facts: PlanFacts; baseline: string | undefined; rank: number },
): Verdict {
  const queued = facts.queued.get(found.name);
  const group = pipelineOf(manifest);
  const ofGroup = group === undefined ? 'of the runs no pipeline started' : `of pipeline ${group}`;
  const age = facts.now - Date.parse(manifest.finishedAt);
  if (queued !== undefined && LIVE.has(queued)) return { found, reason: 'live', why: `the queue has it ${queued}` };
  if (manifest.state === 'held') return { found, reason: 'held', why: 'held by its drift gate: accept or reject it first' };
  if (baseline !== undefined) return { found, reason: 'baseline', why: baseline };
  if (rule.keep !== undefined && rank < rule.keep) return { found, reason: 'newest', why: `one of the ${rule.keep} newest finished runs ${ofGroup}` };
  if (rule.olderThanMs !== undefined && age <= rule.olderThanMs) {
    return { found, reason: 'young', why: `ended ${ageText(age)} ago, within ${ageText(rule.olderThanMs)}` };
  }
  const past = rule.keep === undefined ? '' : `, past the ${rule.keep} newest ${ofGroup}`;
  return { found, reason: 'old', why: `${manifest.state}, ended ${ageText(age)} ago${past}` };
}

/**
 * The runs some pipeline's next run would be compared with, by folder name, each with a sentence
 * saying whose: a pipeline's newest run that succeeded with a profile, the run its newest run
 * names as `baselineRun`, and the runs the jobs folder's pipelines name so.
 */
function currentBaselines(finished: readonly { found: RunFolder; manifest: Manifest }[], named: ReadonlySet<string>): Map<string, string> {
  const baselines = new Map<string, string>();
  for (const runId of named) baselines.set(runId, 'named as baselineRun by a pipeline of the jobs folder');
  const seen = new Set<string>();
  const compared = new Set<string>();
  for (const { found, manifest } of finished) {
    const pipeline = pipelineOf(manifest);
    if (pipeline === undefined) continue;
    const asked = manifest.options.baselineRun;
    if (!seen.has(pipeline) && typeof asked === 'string') baselines.set(asked, `named as baselineRun by the newest run of pipeline ${pipeline}`);
    seen.add(pipeline);
    if (!compared.has(pipeline) && manifest.state === 'succeeded' && manifest.profile !== null) {
      compared.add(pipeline);
      baselines.set(found.name, `the drift baseline of pipeline ${pipeline}: its newest run that succeeded`);
    }
  }
  return baselines;
}

/** The pipeline that started a run, from its manifest's trigger. */
function pipelineOf(manifest: Manifest): string | undefined {
  return triggerPipeline(manifest.trigger ?? undefined);
}

/** Newest first, by when the runs started; runs of one instant by run id, so verdicts hold still. */
function newestFirst(a: Manifest, b: Manifest): number {
  return Date.parse(b.startedAt) - Date.parse(a.startedAt) || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);
}

/** An age as `runs prune --older-than` takes one, in its largest whole unit: `31d`, `5h`, `12m`, `40s`. */
export function ageText(ms: number): string {
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ];
  for (const [unit, size] of units) if (ms >= size) return `${Math.floor(ms / size)}${unit}`;
  return `${Math.max(0, Math.floor(ms / 1000))}s`;
}
