/**
 * The figures the bench takes from a run folder's manifest.json. Read loosely, not through the
 * product's Manifest type: some fields (timings, serviceConnections, concurrency) are newer than
 * others, and an absent one is reported as n/a rather than failing the section.
 */
import { readFile, rm } from 'node:fs/promises';

export interface RunFacts {
  rowsIn: number;
  rowsScored: number;
  requests: number;
  retries: number;
  durationMs: number;
  /** When the run began in its process (ms since the epoch), after start-up. */
  startedAt: number | null;
  planMs: number | null;
  /** From the run's start to the end of a planning that went on while segments were scored. */
  planEndMs: number | null;
  scoreMs: number | null;
  assembleMs: number | null;
  /** Connections opened to the model service. */
  serviceConnections: number | null;
  concurrencyAsked: number | 'auto' | null;
  concurrencySettled: number | null;
  /** Workers that scored segments (queue runs). */
  workers: string[];
  options: Record<string, unknown>;
}

interface LooseManifest {
  state?: string;
  durationMs?: number;
  startedAt?: string;
  counts?: Partial<Record<string, number>> | null;
  options?: Record<string, unknown>;
  timings?: { planMs?: number; scoreMs?: number; assembleMs?: number; planEndMs?: number } | null;
  serviceConnections?: number;
  concurrency?: { asked?: number | 'auto'; settled?: number | null } | null;
  queue?: { workers?: string[] };
}

/** The facts of a manifest's text; throws for a run that did not succeed. */
export function runFacts(text: string): RunFacts {
  const m = JSON.parse(text) as LooseManifest;
  if (m.state !== 'succeeded') throw new Error(`run ${m.state ?? 'without a state'}`);
  const counts = m.counts ?? {};
  return {
    rowsIn: counts.rowsIn ?? 0,
    rowsScored: counts.rowsScored ?? 0,
    requests: counts.requests ?? 0,
    retries: counts.retries ?? 0,
    durationMs: m.durationMs ?? 0,
    startedAt: m.startedAt === undefined ? null : Date.parse(m.startedAt),
    planMs: m.timings?.planMs ?? null,
    planEndMs: m.timings?.planEndMs ?? null,
    scoreMs: m.timings?.scoreMs ?? null,
    assembleMs: m.timings?.assembleMs ?? null,
    // Today's manifests count them as counts.connectionsOpened; a top-level serviceConnections wins if it comes.
    serviceConnections: m.serviceConnections ?? counts.connectionsOpened ?? null,
    concurrencyAsked: m.concurrency?.asked ?? null,
    concurrencySettled: m.concurrency?.settled ?? null,
    workers: m.queue?.workers ?? [],
    options: m.options ?? {},
  };
}

/**
 * Reads a local run folder's manifest, lets `inspect` look at the folder, then deletes it
 * (outputs of 10M rows fill a disk).
 */
export async function takeRunFolder(out: string, runId: string, inspect?: (folder: string) => Promise<void>): Promise<RunFacts> {
  const folder = `${out}/${runId}`;
  try {
    const facts = runFacts(await readFile(`${folder}/manifest.json`, 'utf8'));
    await inspect?.(folder);
    return facts;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** Rows per second over the scoring phase (timings.scoreMs), or over the whole run where the manifest has no timings. */
export function scoringRate(rows: number, facts: RunFacts): number {
  return rows / ((facts.scoreMs ?? facts.durationMs) / 1000);
}
