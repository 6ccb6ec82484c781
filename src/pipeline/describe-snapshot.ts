import { BatchScorerError } from '../errors.js';
import type { ServiceClient } from '../service/client.js';
import { formatModelRef, type ModelRef } from '../service/model-ref.js';
import { ServiceError } from '../service/service-error.js';

/** The raw describe answers of a run's start, stored as describe.json so a run can be explained later. */
export interface DescribeSnapshot {
  takenAt: string;
  service: string;
  model: string;
  answers: { request: object; response: unknown }[];
}

/** What the run needs from describe; every field may be missing on some server. */
export interface ModelFacts {
  version?: number;
  status?: string;
  inputs?: string[];
  outputs?: string[];
}

/**
 * Takes describe `{}` and, when that lacks inputs and outputs (current servers answer a metadata
 * row), `{"attribute": "info"}`; refuses a model that is not ready.
 */
export async function takeDescribeSnapshot(
  client: ServiceClient,
  ref: ModelRef,
  signal?: AbortSignal,
): Promise<{ snapshot: DescribeSnapshot; facts: ModelFacts }> {
  const snapshot: DescribeSnapshot = { takenAt: new Date().toISOString(), service: client.displayUrl, model: formatModelRef(ref), answers: [] };
  const ask = async (request: object) => {
    const response = await client.describe(ref, request, { signal });
    snapshot.answers.push({ request, response });
    return firstObject(response);
  };
  const meta = await ask({});
  const facts: ModelFacts = {};
  if (typeof meta?.VERSION === 'number') facts.version = meta.VERSION;
  if (typeof meta?.STATUS === 'string') facts.status = meta.STATUS;
  let info = meta;
  if (!hasColumns(info)) info = await ask({ attribute: 'info' });
  if (hasColumns(info)) {
    facts.inputs = stringArray(info.inputs);
    facts.outputs = stringArray(info.outputs);
  }
  if (!facts.outputs && typeof meta?.PREDICT === 'string') facts.outputs = meta.PREDICT.split(',').map((s) => s.trim());

  const status = facts.status?.toLowerCase();
  if (status === 'error') {
    // ERROR is a message or null; anything else is shown as the JSON it came as.
    const reason = meta?.ERROR ?? 'no reason given';
    throw new ServiceError(
      'fatal',
      `model ${formatModelRef(ref)} failed training: ${typeof reason === 'string' ? reason : JSON.stringify(reason)} (retrain it, or pick a version that trained)`,
    );
  }
  if (status !== undefined && status !== 'complete') {
    throw new ServiceError('not-ready', `model ${formatModelRef(ref)} is not ready: status "${facts.status}" (wait until it is "complete")`);
  }
  return { snapshot, facts };
}

function firstObject(response: unknown): Record<string, unknown> | undefined {
  const first: unknown = Array.isArray(response) ? response[0] : undefined;
  if (first && typeof first === 'object' && !Array.isArray(first)) {
    const row = first as Record<string, unknown>;
    if (typeof row.error === 'string') throw new BatchScorerError('E_SERVICE_FATAL', `describe failed on the server: ${row.error}`);
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
