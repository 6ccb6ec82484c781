import type { BatchScorerError } from '../errors.js';
import { TOOL } from '../version.js';
import type { PreparedRun } from './prepared-run.js';
import type { SegmentCounts } from './segment-counts.js';

/** One file of the run folder, as the manifest lists it. */
export interface OutputFile {
  file: string;
  location: string;
  rows: number;
  bytes: number;
  sha256: string;
}

/** Facts about the queue when a run was scored by workers (absent in direct mode). */
export interface QueueFacts {
  jobIds: string[];
  attempts: number;
  workers: string[];
}

/** manifest.json: enough to explain a run and to run it again the same way. */
export interface Manifest {
  runId: string;
  /** The run folder, `<out>/<runId>`; null for a run that failed before it was prepared. */
  folder: string | null;
  state: 'succeeded' | 'failed';
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  tool: { name: string; version: string };
  input: {
    location: string;
    etag: string | null;
    size: number | null;
    mtime: string | null;
    sha256: string | null;
    rows: number | null;
    format: string | null;
    gzip: boolean | null;
  };
  model: PreparedRun['model'] | { requested: string };
  service: string | null;
  options: PreparedRun['request']['options'] | Record<string, unknown>;
  counts: (SegmentCounts & { segments: number }) | null;
  outputs: OutputFile[];
  warnings: string[];
  error?: { code: string; message: string };
  queue?: QueueFacts;
}

export interface ManifestParts {
  runId: string;
  startedAt: string;
  /** The prepared run, when the run got that far. */
  run?: PreparedRun;
  /** What was asked, for runs that failed before being prepared. */
  request?: { input: string; model: string; options: Record<string, unknown> };
  counts?: SegmentCounts & { segments: number };
  outputs?: OutputFile[];
  warnings?: string[];
  error?: BatchScorerError | Error;
  queue?: QueueFacts;
}

export function buildManifest(parts: ManifestParts): Manifest {
  const { run } = parts;
  const finishedAt = new Date();
  const input = run?.input;
  return {
    runId: parts.runId,
    folder: run?.folder ?? null,
    state: parts.error ? 'failed' : 'succeeded',
    startedAt: parts.startedAt,
    finishedAt: finishedAt.toISOString(),
    durationMs: finishedAt.getTime() - Date.parse(parts.startedAt),
    tool: TOOL,
    input: {
      location: input?.location ?? parts.request?.input ?? '',
      etag: input?.info.etag ?? null,
      size: input?.info.size ?? null,
      mtime: input?.info.mtimeMs !== undefined ? new Date(input.info.mtimeMs).toISOString() : null,
      sha256: input?.sha256 ?? null,
      rows: input?.rows ?? null,
      format: input?.syntax ?? null,
      gzip: input?.gzip ?? null,
    },
    model: run?.model ?? { requested: parts.request?.model ?? '' },
    service: run?.service ?? null,
    options: run?.request.options ?? parts.request?.options ?? {},
    counts: parts.counts ?? null,
    outputs: parts.outputs ?? [],
    warnings: [...(run?.warnings ?? []), ...(parts.warnings ?? [])],
    ...(parts.error ? { error: { code: (parts.error as BatchScorerError).code ?? 'E_INTERNAL', message: parts.error.message } } : {}),
    ...(parts.queue ? { queue: parts.queue } : {}),
  };
}
