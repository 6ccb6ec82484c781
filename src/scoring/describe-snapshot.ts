import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { BatchScorerError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Predictor } from './predictor.js';
import { formatModelRef, type ModelRef, ServiceError } from '../service/index.js';
import { excerpt } from '../text-excerpt.js';

/** The raw describe answers of a run's start, stored as describe.json so a run can be explained later. */
export const describeSnapshotSchema = z.object({
  takenAt: z.string(),
  service: z.string(),
  model: z.string(),
  answers: z.array(z.object({ request: z.record(z.string(), z.unknown()), response: z.unknown() })),
});

export type DescribeSnapshot = z.infer<typeof describeSnapshotSchema>;

/** What the run needs from describe; every field may be missing on some server. */
export interface ModelFacts {
  version?: number;
  /** Whether the version described is the model's active one (`ACTIVE`), where describe says. */
  active?: boolean;
  status?: string;
  inputs?: string[];
  outputs?: string[];
  /** The row id member this server's brand echoes, when describe names the brand (`MINDSDB_VERSION`). */
  rowIdMemberHint?: string;
  /** Describe says the model forecasts a horizon (time-series settings), so it cannot answer row by row. */
  timeSeries: boolean;
}

/**
 * Takes describe `{}` and, when that lacks inputs and outputs (current servers answer a metadata
 * row), `{"attribute": "info"}` of the version `{}` named, the one the run is pinned to: asked of
 * the model's name alone, a retrain between the two answers would have it describe another model
 * than the one scored. Nothing answering at the service's address fails at once: this is the
 * first call of a run, so the address is more likely wrong than the service restarting.
 */
export async function takeDescribeSnapshot(client: Predictor, ref: ModelRef, options: DescribeOptions = {}): Promise<DescribeSnapshot> {
  const snapshot: DescribeSnapshot = { takenAt: new Date().toISOString(), service: client.displayUrl, model: formatModelRef(ref), answers: [] };
  const meta = await askDescribe(client, ref, {}, snapshot, { ...options, firstContact: true });
  // A model still training, or failed, has no columns to tell: MindsDB's BYOM engine answers its
  // `info` with a handler error. modelFacts names its status instead.
  const status = typeof meta?.STATUS === 'string' ? meta.STATUS.toLowerCase() : 'complete';
  if (!hasColumns(meta) && status === 'complete') {
    const pinned = ref.version === undefined && typeof meta?.VERSION === 'number' ? { ...ref, version: meta.VERSION } : ref;
    await askDescribe(client, pinned, { attribute: 'info' }, snapshot, options);
  }
  return snapshot;
}

/** Past this (as compact JSON), a snapshot is written without indenting (see indentedSnapshot). */
const INDENTED_SNAPSHOT_BYTES = 256 * 1024;

/**
 * Whether a snapshot is written indented, for people to read: only while it is small. Indenting
 * repeats a value's depth on each of its lines, so an answer within MAX_DESCRIBE_BYTES but nested
 * deep (7 MB of numbers 60 levels down) came to 450 MB indented.
 */
export function indentedSnapshot(snapshot: DescribeSnapshot): boolean {
  return JSON.stringify(snapshot.answers).length <= INDENTED_SNAPSHOT_BYTES;
}

/** A run's signal, and its logger for the client's retries. */
export interface DescribeOptions {
  signal?: AbortSignal;
  log?: Logger;
}

/** The facts a run needs from a snapshot; refuses a model that is not ready. */
export function modelFacts(snapshot: DescribeSnapshot, ref: ModelRef): ModelFacts {
  const [meta, second] = snapshot.answers.map((a) => firstObject(a.response));
  const info = hasColumns(meta) ? meta : second;
  const facts: ModelFacts = { timeSeries: false };
  if (typeof meta?.VERSION === 'number') facts.version = meta.VERSION;
  if (typeof meta?.ACTIVE === 'boolean') facts.active = meta.ACTIVE;
  if (typeof meta?.STATUS === 'string') facts.status = meta.STATUS;
  if (meta?.MINDSDB_VERSION !== undefined) facts.rowIdMemberHint = '__mindsdb_row_id';
  if (hasColumns(info)) {
    facts.inputs = stringArray(info.inputs);
    facts.outputs = stringArray(info.outputs);
  }
  if (!facts.outputs && typeof meta?.PREDICT === 'string') facts.outputs = meta.PREDICT.split(',').map((s) => s.trim());
  const training = meta?.TRAINING_OPTIONS;
  facts.timeSeries = /timeseries_settings/.test(typeof training === 'string' ? training : JSON.stringify(training ?? null));

  const status = facts.status?.toLowerCase();
  if (status === 'error') {
    // ERROR is a message or null; anything else is shown as the JSON it came as.
    const reason = meta?.ERROR ?? 'no reason given';
    throw new ServiceError(
      'fatal',
      `model ${formatModelRef(ref)} failed training: ${excerpt(typeof reason === 'string' ? reason : JSON.stringify(reason))} (retrain it, or pick a version that trained)`,
    );
  }
  if (status !== undefined && status !== 'complete') {
    throw new ServiceError('not-ready', `model ${formatModelRef(ref)} is not ready: status "${excerpt(String(facts.status))}" (wait until it is "complete")`);
  }
  return facts;
}

/**
 * Asks describe again, as the snapshot did, and names the members whose answer differs (for a
 * server without versions, the only way to see a model retrained during the run).
 */
export async function describeChanges(client: Predictor, ref: ModelRef, snapshot: DescribeSnapshot, options: DescribeOptions = {}): Promise<string[]> {
  const changed = new Set<string>();
  for (const { request, response } of snapshot.answers) {
    const [before, after] = [firstObject(response) ?? {}, firstObject(await client.describe(ref, request, options)) ?? {}];
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (!isDeepStrictEqual(before[key], after[key])) changed.add(key);
    }
  }
  return [...changed];
}

/**
 * The model's active version now: the one describe `{}` of the model named without a version
 * reports (undefined where it reports none).
 */
export async function activeVersion(client: Predictor, ref: ModelRef, options: DescribeOptions = {}): Promise<number | undefined> {
  const meta = firstObject(await client.describe({ project: ref.project, model: ref.model }, {}, options));
  return typeof meta?.VERSION === 'number' ? meta.VERSION : undefined;
}

async function askDescribe(
  client: Predictor,
  ref: ModelRef,
  request: Record<string, unknown>,
  snapshot: DescribeSnapshot,
  options: DescribeOptions & { firstContact?: boolean },
): Promise<Record<string, unknown> | undefined> {
  const response = await client.describe(ref, request, options);
  snapshot.answers.push({ request, response });
  return firstObject(response);
}

function firstObject(response: unknown): Record<string, unknown> | undefined {
  const first: unknown = Array.isArray(response) ? response[0] : undefined;
  if (first && typeof first === 'object' && !Array.isArray(first)) {
    const row = first as Record<string, unknown>;
    if (typeof row.error === 'string') throw new BatchScorerError('E_SERVICE_FATAL', `describe failed on the server: ${excerpt(row.error)}`);
    return row;
  }
  return undefined;
}

function hasColumns(row: Record<string, unknown> | undefined): row is Record<string, unknown> & { inputs: unknown; outputs: unknown } {
  return Array.isArray(row?.inputs) || Array.isArray(row?.outputs);
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.map(String) : undefined;
}
