import {
  type Comparison,
  comparisonSchema,
  type DescribeSnapshot,
  describeSnapshotSchema,
  isSettled,
  type Manifest,
  type PreparedRun,
  readManifest,
  readPreparedRun,
  readRunFile,
  runFiles,
  type RunProgress,
  type RunState,
} from '../scoring/index.js';
import {
  findJob,
  type Queue,
  RETENTION,
  type RunProgressStore,
  type RunStatus,
  segmentJobId,
  type SegmentMark,
  type ThroughputSample,
} from '../queue/index.js';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { errorMessage, NotFoundError } from '../errors.js';
import { type DeliveryRecord, readDeliveryRecords } from '../notify/index.js';
import type { KnownRuns } from '../run-index/index.js';
import { joinLocation, type Location, parseLocation, type Storage } from '../storage/index.js';

/** Runs a page of the list shows, newest first. */
export const LIST_PAGE_SIZE = 50;
/** The list's last page: as far as the queue keeps runs of one state (see RETENTION), so deep pages stay bounded reads. */
export const LIST_MAX_PAGE = Math.ceil(RETENTION.runs.removeOnFail.count / LIST_PAGE_SIZE);
/** Quarantined rows a run page shows; errors.jsonl is read only that far. */
export const QUARANTINE_SAMPLE = 20;
/** Bytes of errors.jsonl read at most for the sample, whatever its rows hold. */
const QUARANTINE_BYTES = 1 << 20;
/**
 * Bytes of comparison.json a page reads at most. The run writes at most ROWS_SHOWN bounded rows
 * per target there, far less than this: a larger file was not written so, and is not read.
 */
const COMPARISON_BYTES = 1 << 20;
/** Points of the throughput chart at most: longer histories are shown over longer intervals. */
const THROUGHPUT_POINTS = 300;

/** Where the run pages read from: the runs (the queue's and the run folders', see knownRuns), the segment jobs, the progress hashes and the run folders. */
export interface RunPageSources {
  runs: KnownRuns;
  segments: Queue;
  progress: RunProgressStore;
  storage: Storage;
}

export type { NumericSummary, PredictionProfile } from '../scoring/index.js';

/** The manifest as a page reads it (older runs' manifests read with a null profile). */
export type PageManifest = Manifest;

/** One line of errors.jsonl (see score-segment's errorLine). */
const quarantinedRowSchema = z.object({
  row: z.number(),
  line: z.number().nullable().optional(),
  input: z.unknown(),
  status: z.number().nullable(),
  title: z.string().nullable(),
  detail: z.string(),
});
export type QuarantinedRow = z.output<typeof quarantinedRowSchema>;

/** A segment's cell in the grid. `skipped`: not scored, since its run failed or stopped first. */
export interface SegmentCell {
  index: number;
  state: 'waiting' | 'retrying' | 'active' | 'done' | 'failed' | 'skipped';
  /** Rows scored so far and quarantined; unknown once the run's progress has expired. */
  rows?: number;
  quarantined?: number;
  /** The worker scoring it (active) or that last took it. */
  worker?: string;
  attempts?: number;
  reason?: string;
}

/** One point of the throughput chart: rows per second over the interval ending `seconds` after the first sample. */
export interface ThroughputPoint {
  seconds: number;
  rowsPerSecond: number;
}

/** Everything a run page shows; a part that could not be read is missing and its reason is in `problems`. */
export interface RunPageView {
  status: RunStatus;
  /** The queue has no record of the run (a `score` run, or one Redis no longer has): what only Redis keeps (segments, throughput) is not known. */
  folderOnly?: boolean;
  progress?: RunProgress;
  /** Empty until the run is planned. */
  segments: SegmentCell[];
  throughput: ThroughputPoint[];
  manifest?: PageManifest;
  /** The model as the run resolved it at its start, and the service it scores on (`_work/run.json`): read while it has no manifest yet. */
  prepared?: Pick<PreparedRun, 'model' | 'service'>;
  describe?: DescribeSnapshot;
  /** Shadow scoring's comparison.json, read for its differing rows when the manifest has a `comparison`; or why it was not read. */
  comparison?: Comparison | { unread: string };
  quarantined: { rows: (QuarantinedRow | { unreadable: string })[]; from: string } | undefined;
  /** The webhook deliveries of the run's end (`notifications/` of its folder), when it has any. */
  notifications?: DeliveryRecord[];
  problems: string[];
}

/** What the run list is narrowed to: runs in one state, runs one pipeline of `jobs/*.yaml` started, or both; and which page of those (1: the newest). */
export interface RunListFilter {
  state?: RunState;
  pipeline?: string;
  page?: number;
}

/** One page of the run list: its runs, newest first, and whether older runs follow. */
export interface RunListPage {
  runs: RunStatus[];
  older: boolean;
}

/** The `filter.page`th page of the most recent runs that pass `filter`: one run more is read, to know whether an older page exists. */
export async function gatherRunList(sources: RunPageSources, filter: RunListFilter = {}): Promise<RunListPage> {
  const { page = 1, ...narrow } = filter;
  const runs = await sources.runs.list({ ...narrow, offset: (page - 1) * LIST_PAGE_SIZE, limit: LIST_PAGE_SIZE + 1 });
  return { runs: runs.slice(0, LIST_PAGE_SIZE), older: runs.length > LIST_PAGE_SIZE };
}

/** A run page's content, or undefined for a run neither the queue nor the run folders know. */
export async function gatherRunPage(sources: RunPageSources, runId: string): Promise<RunPageView | undefined> {
  const known = await sources.runs.find(runId);
  if (!known) return undefined;
  const { status, onQueue } = known;
  const problems: string[] = [];
  const attempt = async <T>(what: string, read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      problems.push(`${what}: ${errorMessage(err)}`);
      return undefined;
    }
  };
  const folder = parseLocation(status.folder);
  const finished = isSettled(status.state);
  const finishedAt = status.finishedAt ? Date.parse(status.finishedAt) : undefined;
  // Only Redis keeps a run's segments and throughput samples: none are asked of it for a run it has no record of.
  const details: Awaited<ReturnType<RunProgressStore['details']>> = onQueue
    ? await sources.progress.details(runId, finished ? finishedAt : undefined)
    : { segments: [], samples: [] };
  const [manifest, describe] = await Promise.all([
    attempt('manifest.json', () => readManifest(sources.storage, folder)),
    attempt('describe.json', () => readRunFile(sources.storage, runFiles.describe(folder), describeSnapshotSchema)),
  ]);
  // Before the manifest, the version the run is pinned to is in its prepared run (none before it is planned).
  const prepared = manifest ? undefined : await attempt('_work/run.json', () => readPreparedRun(sources.storage, folder));
  const generation = Date.parse(status.enqueuedAt);
  const succeeded = manifest?.state === 'succeeded';
  // Past the progress hash's expiry, a run that succeeded still had all its segments done.
  const marks = details.segments.length === 0 && succeeded && manifest.counts ? Array<undefined>(manifest.counts.segments).fill(undefined) : details.segments;
  const segments = onQueue ? await attempt('segment jobs', () => segmentCells(sources.segments, runId, generation, marks, finished, succeeded)) : [];
  const quarantined = await attempt('quarantined rows', () => quarantineSample(sources.storage, folder, details.segments));
  const comparison = manifest?.comparison ? await attempt('comparison.json', () => comparisonFile(sources.storage, folder)) : undefined;
  const notifications = manifest ? await attempt('notifications/', () => readDeliveryRecords(sources.storage, folder)) : undefined;
  return {
    status,
    ...(onQueue ? {} : { folderOnly: true }),
    ...(details.progress ? { progress: details.progress } : status.progress ? { progress: status.progress } : {}),
    segments: segments ?? [],
    throughput: throughputSeries(details.samples),
    ...(manifest ? { manifest } : {}),
    ...(prepared ? { prepared: { model: prepared.model, service: prepared.service } } : {}),
    ...(describe ? { describe } : {}),
    ...(comparison ? { comparison } : {}),
    ...(notifications?.length ? { notifications } : {}),
    quarantined,
    problems,
  };
}

/**
 * The segments' cells. A segment the progress hash marks done is done; the others are as their
 * job is. A job that is gone (removed after its retention) was done if the run succeeded, else
 * it was never scored. No mark at all: the run succeeded, but its progress expired.
 */
async function segmentCells(
  segments: Queue,
  runId: string,
  generation: number,
  marks: (SegmentMark | undefined)[],
  runFinished: boolean,
  runSucceeded: boolean,
): Promise<SegmentCell[]> {
  return Promise.all(
    marks.map(async (mark, index): Promise<SegmentCell> => {
      if (!mark) return { index, state: 'done' };
      const cell = { index, rows: mark.rows, quarantined: mark.quarantined };
      if (mark.done) return { ...cell, state: 'done' };
      const id = segmentJobId(runId, generation, index);
      // The state before the job: a copy read before its move to failed or completed lacks the reason and result.
      const state = await segments.getJobState(id);
      const job = state === 'unknown' ? undefined : await findJob(segments, id);
      if (!job) return { ...cell, state: runSucceeded ? 'done' : runFinished ? 'skipped' : 'waiting' };
      const facts = { ...cell, ...(job.processedBy ? { worker: job.processedBy } : {}), attempts: job.attemptsMade };
      if (state === 'active') return { ...facts, state: 'active' };
      if (state === 'failed') return { ...facts, state: 'failed', reason: job.failedReason };
      if (state === 'completed') return { ...facts, state: skippedSegment.safeParse(job.returnvalue).success ? 'skipped' : 'done' };
      return { ...facts, state: job.attemptsMade > 0 ? 'retrying' : 'waiting' };
    }),
  );
}

/** What a segment job answers when its run failed before it started (see segment-job). */
const skippedSegment = z.object({ skipped: z.enum(['run failed', 'run cancelled']) });

/**
 * The first quarantined rows: from errors.jsonl once the run is assembled, else from the
 * segments done so far that quarantined rows, in segment order. Undefined when there are none.
 */
async function quarantineSample(storage: Storage, folder: Location, marks: SegmentMark[]): Promise<RunPageView['quarantined']> {
  const assembled = runFiles.errors(folder);
  const fromAssembled = await firstLines(storage, assembled, QUARANTINE_SAMPLE);
  if (fromAssembled) return fromAssembled.length > 0 ? { rows: fromAssembled.map(quarantinedRow), from: 'errors.jsonl' } : undefined;
  const rows: string[] = [];
  for (const [index, mark] of marks.entries()) {
    if (rows.length >= QUARANTINE_SAMPLE) break;
    if (!mark.done || mark.quarantined === 0) continue;
    // A segment a cap stopped and a resume finished has its rows in pieces, each with its own file.
    for (let piece = 0; rows.length < QUARANTINE_SAMPLE; piece++) {
      const lines = await firstLines(storage, runFiles.segmentErrors(folder, index, piece), QUARANTINE_SAMPLE - rows.length);
      if (lines === undefined) break;
      rows.push(...lines);
    }
  }
  return rows.length > 0 ? { rows: rows.map(quarantinedRow), from: 'the segments scored so far' } : undefined;
}

function quarantinedRow(line: string): QuarantinedRow | { unreadable: string } {
  try {
    const parsed = quarantinedRowSchema.safeParse(JSON.parse(line));
    if (parsed.success) return parsed.data;
  } catch {
    // shown as it is, below
  }
  return { unreadable: line.slice(0, 200) };
}

/** The run's comparison.json, or why it is not read: missing, or larger than COMPARISON_BYTES (never read whole then). */
async function comparisonFile(storage: Storage, folder: Location): Promise<NonNullable<RunPageView['comparison']>> {
  const loc = runFiles.comparison(folder);
  let size: number;
  try {
    size = (await storage.stat(loc)).size;
  } catch (err) {
    if (err instanceof NotFoundError) return { unread: 'comparison.json is missing from the run folder.' };
    throw err;
  }
  if (size > COMPARISON_BYTES) {
    return {
      unread: `comparison.json takes ${size.toLocaleString('en-US')} bytes, more than the ${COMPARISON_BYTES / (1 << 20)} MiB a page reads (a run writes far less): download it to look at it.`,
    };
  }
  return (await readRunFile(storage, loc, comparisonSchema)) ?? { unread: 'comparison.json is missing from the run folder.' };
}

/**
 * The first `count` lines of a file, read as a stream that is dropped as soon as they are in
 * (never the whole file, and never more than QUARANTINE_BYTES); undefined when it does not exist.
 */
export async function firstLines(storage: Storage, loc: Location, count: number): Promise<string[] | undefined> {
  let stream: Readable;
  try {
    stream = await storage.read(loc);
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
  const lines: string[] = [];
  const decoder = new StringDecoder('utf8');
  let partial = '';
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      // A character whose bytes straddle two chunks is decoded whole, not as two U+FFFD.
      const text = partial + decoder.write(chunk as Buffer);
      bytes += (chunk as Buffer).length;
      const parts = text.split('\n');
      partial = parts.pop()!;
      lines.push(...parts.filter((l) => l.trim() !== ''));
      if (lines.length >= count || bytes >= QUARANTINE_BYTES) break;
    }
  } finally {
    stream.destroy();
  }
  if (lines.length < count && partial.trim() !== '' && bytes < QUARANTINE_BYTES) lines.push(partial);
  return lines.slice(0, count);
}

/**
 * Rows per second between samples, at most THROUGHPUT_POINTS of them: samples closer than the
 * interval that gives are skipped (the rate then spans both), so a long run's chart stays light
 * and a final sample taken just after another does not show as a spike.
 */
export function throughputSeries(samples: ThroughputSample[]): ThroughputPoint[] {
  if (samples.length < 2) return [];
  const first = samples[0];
  const last = samples[samples.length - 1];
  const gap = Math.max(1_000, (last.t - first.t) / THROUGHPUT_POINTS);
  const kept = [first];
  for (const s of samples.slice(1)) if (s.t - kept[kept.length - 1].t >= gap) kept.push(s);
  if (kept[kept.length - 1] !== last) {
    if (kept.length > 1) kept[kept.length - 1] = last;
    else kept.push(last);
  }
  return kept.slice(1).map((s, i) => {
    const before = kept[i];
    const rate = ((s.rowsDone - before.rowsDone) * 1000) / Math.max(1, s.t - before.t);
    return { seconds: Math.round((s.t - first.t) / 100) / 10, rowsPerSecond: Math.max(0, Math.round(rate)) };
  });
}

/**
 * A finished run's output file, by its name in the manifest, or undefined when the manifest lists
 * no such file: one of its outputs, or the comparison file of its `comparison`. Only files of the
 * run folder itself are served, whatever the manifest says.
 */
export async function outputFile(sources: RunPageSources, runId: string, name: string): Promise<{ location: Location; file: string } | undefined> {
  const status = await sources.runs.get(runId);
  if (!status || name.includes('/') || name.includes('\\') || name.startsWith('.')) return undefined;
  const folder = parseLocation(status.folder);
  const manifest = await readManifest(sources.storage, folder);
  const listed = manifest?.outputs.find((o) => o.file === name) ?? (manifest?.comparison?.file === name ? manifest.comparison : undefined);
  return listed ? { location: joinLocation(folder, listed.file), file: listed.file } : undefined;
}
