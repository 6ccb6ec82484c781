import { isSettled, type RunState } from '../pipeline/run-lifecycle.js';
import pLimit from 'p-limit';
import { errorMessage } from '../errors.js';
import { readManifest } from '../pipeline/manifest.js';
import { type RunStatus } from '../queue/producer.js';
import { RETENTION } from '../queue/queues.js';
import { parseLocation } from '../storage/location.js';
import { nextFireTime } from '../triggers/next-fire-time.js';
import type { Pipeline } from '../triggers/pipelines.js';
import type { PageManifest, RunPageSources } from './run-page-data.js';

/** Runs a pipeline's page lists (and charts), newest first. */
export const PIPELINE_PAGE_SIZE = 30;
/** Its last page: as far as the queue keeps runs of one state (see RETENTION), so deep pages stay bounded reads. */
export const PIPELINE_MAX_PAGE = Math.ceil(RETENTION.runs.removeOnFail.count / PIPELINE_PAGE_SIZE);
/** The recent runs a pipeline's counts by state are taken over. */
export const RECENT_RUNS = 50;
/** Manifests read at once: a page reads its runs' manifests in parallel, but not all at once from the storage. */
const MANIFEST_READS = 4;

/** Where the pipeline pages read from: the runs (a pipeline's, newest first) and the run folders. */
export type PipelinePageSources = Pick<RunPageSources, 'runs' | 'storage'>;

/** What the list and a pipeline's page say of a pipeline above its runs. */
export interface PipelineSummary {
  pipeline: Pipeline;
  /** A scheduled pipeline's next firing after now, as its scheduler computes it. */
  next?: Date;
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
export function gatherPipelineList(sources: PipelinePageSources, pipelines: readonly Pipeline[], now: Date): Promise<PipelineSummary[]> {
  return Promise.all(pipelines.map((p) => summarize(sources, p, now)));
}

/** A pipeline's page: its summary, a page of its runs and those runs' manifests (never more than the page's). */
export async function gatherPipelinePage(sources: PipelinePageSources, pipeline: Pipeline, page: number, now: Date): Promise<PipelinePageView> {
  const [summary, listed] = await Promise.all([
    summarize(sources, pipeline, now),
    sources.runs.list({ pipeline: pipeline.name, offset: (page - 1) * PIPELINE_PAGE_SIZE, limit: PIPELINE_PAGE_SIZE + 1 }),
  ]);
  const statuses = listed.slice(0, PIPELINE_PAGE_SIZE);
  const reads = pLimit(MANIFEST_READS);
  const runs = await Promise.all(statuses.map((status) => reads(() => withManifest(sources, status))));
  return { summary, runs, page, older: listed.length > PIPELINE_PAGE_SIZE };
}

async function summarize(sources: PipelinePageSources, pipeline: Pipeline, now: Date): Promise<PipelineSummary> {
  const recent = await sources.runs.list({ pipeline: pipeline.name, limit: RECENT_RUNS });
  const byState: Partial<Record<RunState, number>> = {};
  for (const r of recent) byState[r.state] = (byState[r.state] ?? 0) + 1;
  const next = pipeline.kind === 'schedule' ? nextFireTime(pipeline.schedule, now) : undefined;
  return { pipeline, ...(next ? { next } : {}), ...(recent[0] ? { latest: recent[0] } : {}), recent: { total: recent.length, byState } };
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
