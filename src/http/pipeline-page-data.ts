import { isSettled, readManifest, type RunState } from '../scoring/index.js';
import pLimit from 'p-limit';
import { errorMessage } from '../errors.js';
import { RETENTION, type RunStatus } from '../queue/index.js';
import { parseLocation } from '../storage/index.js';
import { nextFireTime, type Pipeline, type ScheduledPipeline, type ScheduleView } from '../triggers/index.js';
import type { PageManifest, RunPageSources } from './run-page-data.js';

/** Runs a pipeline's page lists (and charts), newest first. */
export const PIPELINE_PAGE_SIZE = 30;
/** Its last page: as far as the queue keeps runs of one state (see RETENTION), so deep pages stay bounded reads. */
export const PIPELINE_MAX_PAGE = Math.ceil(RETENTION.runs.removeOnFail.count / PIPELINE_PAGE_SIZE);
/** The recent runs a pipeline's counts by state are taken over. */
export const RECENT_RUNS = 50;
/** Manifests read at once: a page reads its runs' manifests in parallel, but not all at once from the storage. */
const MANIFEST_READS = 4;

/** Where the pipeline pages read from: the runs (a pipeline's, newest first), the run folders, and the schedulers in Redis. */
export type PipelinePageSources = Pick<RunPageSources, 'runs' | 'storage'> & {
  /** The job schedulers of the schedules queue (see listSchedules): what fires scheduled pipelines, whatever jobs/*.yaml says. */
  schedules: () => Promise<Schedulers>;
};

/** The schedulers in Redis, as the pipeline pages read them: each one's id (its pipeline's name), cron and time zone. */
type Schedulers = readonly Pick<ScheduleView, 'id' | 'cron' | 'tz'>[];

/**
 * How a scheduled pipeline's scheduler in Redis stands: `synced` (as jobs/*.yaml declares it),
 * `missing` (none: never synced, or Redis lost it, so it does not fire), or `differs` (it fires by
 * another cron or time zone: `schedule sync` was not run since jobs/*.yaml changed).
 */
export type SchedulerStanding = 'synced' | 'missing' | 'differs';

/** What the list and a pipeline's page say of a pipeline above its runs. */
export interface PipelineSummary {
  pipeline: Pipeline;
  /** A scheduled pipeline's next firing after now, as its scheduler in Redis computes it; absent when Redis has none. */
  next?: Date;
  /** A scheduled pipeline's scheduler in Redis (see SchedulerStanding), and the cron and time zone it fires by. */
  scheduler?: { standing: SchedulerStanding; cron?: string; tz?: string };
  /** Its newest run, if the queue still has one. */
  latest?: RunStatus;
  /** Its RECENT_RUNS newest runs, counted by state. */
  recent: { total: number; byState: Partial<Record<RunState, number>> };
}

/** One run of a pipeline's page, with its manifest once it ended (or why that could not be read). */
export interface PipelineRun {
  status: RunStatus;
  manifest?: PageManifest;
  problem?: string;
}

/** A pipeline's page: its summary and the `page`th page of its runs, newest first. */
export interface PipelinePageView {
  summary: PipelineSummary;
  runs: PipelineRun[];
  page: number;
  /** Whether older runs follow. */
  older: boolean;
}

/** Every pipeline's summary, in the order `jobs/*.yaml` declares them. */
export async function gatherPipelineList(sources: PipelinePageSources, pipelines: readonly Pipeline[], now: Date): Promise<PipelineSummary[]> {
  const schedules = await sources.schedules();
  return Promise.all(pipelines.map((p) => summarize(sources, schedules, p, now)));
}

/** A pipeline's page: its summary, a page of its runs and those runs' manifests (never more than the page's). */
export async function gatherPipelinePage(sources: PipelinePageSources, pipeline: Pipeline, page: number, now: Date): Promise<PipelinePageView> {
  const [summary, listed] = await Promise.all([
    sources.schedules().then((schedules) => summarize(sources, schedules, pipeline, now)),
    sources.runs.list({ pipeline: pipeline.name, offset: (page - 1) * PIPELINE_PAGE_SIZE, limit: PIPELINE_PAGE_SIZE + 1 }),
  ]);
  const statuses = listed.slice(0, PIPELINE_PAGE_SIZE);
  const reads = pLimit(MANIFEST_READS);
  const runs = await Promise.all(statuses.map((status) => reads(() => withManifest(sources, status))));
  return { summary, runs, page, older: listed.length > PIPELINE_PAGE_SIZE };
}

async function summarize(sources: PipelinePageSources, schedules: Schedulers, pipeline: Pipeline, now: Date): Promise<PipelineSummary> {
  const recent = await sources.runs.list({ pipeline: pipeline.name, limit: RECENT_RUNS });
  const byState: Partial<Record<RunState, number>> = {};
  for (const r of recent) byState[r.state] = (byState[r.state] ?? 0) + 1;
  const scheduled = pipeline.kind === 'schedule' ? schedulerOf(pipeline, schedules, now) : {};
  return { pipeline, ...scheduled, ...(recent[0] ? { latest: recent[0] } : {}), recent: { total: recent.length, byState } };
}

/**
 * A scheduled pipeline's scheduler as Redis holds it, and its next firing by the cron and time zone
 * it fires by there: what jobs/*.yaml declares fires nothing until `schedule sync` makes it so.
 */
function schedulerOf(pipeline: ScheduledPipeline, schedules: Schedulers, now: Date): Pick<PipelineSummary, 'next' | 'scheduler'> {
  const found = schedules.find((s) => s.id === pipeline.name);
  if (!found) return { scheduler: { standing: 'missing' } };
  const { cron, tz } = pipeline.schedule;
  const standing = found.cron === cron && found.tz === tz ? 'synced' : 'differs';
  const next = found.cron === undefined ? undefined : nextFireTime({ cron: found.cron, tz: found.tz }, now);
  return { scheduler: { standing, ...(found.cron !== undefined && { cron: found.cron }), tz: found.tz }, ...(next ? { next } : {}) };
}

/** A run with its manifest, read as the run page reads it: only for a run that ended, whose folder has one. */
async function withManifest(sources: PipelinePageSources, status: RunStatus): Promise<PipelineRun> {
  if (!isSettled(status.state)) return { status };
  try {
    const manifest = await readManifest(sources.storage, parseLocation(status.folder));
    return manifest ? { status, manifest } : { status };
  } catch (err) {
    return { status, problem: `manifest.json: ${errorMessage(err)}` };
  }
}
