import { BatchScorerError } from '../errors.js';
import { parseModelRef } from '../service/model-ref.js';
import { formatLocation, parseLocation } from '../storage/location.js';
import type { Storage } from '../storage/storage-types.js';
import { inputMissing } from './input-bytes.js';
import type { RunRequest } from './run-request.js';

/**
 * Refuses a request that cannot run, before the service is asked anything and before anything is
 * written: a malformed model name, an input that is missing or not a file, an output location
 * where run folders cannot be written. Names are checked before storage is touched. What passes
 * may still fail later (an unknown model, bad rows); what fails here leaves nothing behind.
 */
export async function preflight(request: RunRequest, storage: Storage, signal?: AbortSignal): Promise<void> {
  parseModelRef(request.model);
  const input = parseLocation(request.input);
  const out = parseLocation(request.out);
  await storage.stat(input, signal).catch(inputMissing);
  const why = await storage.whyUnwritable(out, signal);
  if (why !== undefined) {
    throw new BatchScorerError('E_OUTPUT', `cannot write run folders to ${formatLocation(out)}: ${why}; choose another --out`, { exitCode: 2 });
  }
}
