import { BatchScorerError, errorMessage, InputError, UsageError } from '../errors.js';
import { checkDialect, dialectForName } from '../formats/index.js';
import { parseModelRef } from '../service/index.js';
import { checkInputOptions, parseRunInput } from '../config/index.js';
import { formatLocation, listInputFiles, type Location, parseLocation, type Storage, versionTag } from '../storage/index.js';
import { inputMissing } from './input-bytes.js';
import type { RunRequest } from './run-request.js';
import { checkTableOptions } from './table-options.js';

/**
 * Refuses a request that cannot run, before the service is asked anything and before anything is
 * written: a malformed model name, options that do not fit the input (--table or --query for files, neither for a database) or do not go with --out-table, a CSV delimiter and quote that do not fit together, an input that names no file (a missing file, an empty folder, a
 * glob that matches nothing; or, for a run a file drop started, no longer the version dropped), an output location where run folders cannot be
 * written. Names are checked before storage is touched. What passes
 * may still fail later (an unknown model, bad rows); what fails here leaves nothing behind.
 */
export async function preflight(request: RunRequest, storage: Storage, signal?: AbortSignal): Promise<void> {
  parseModelRef(request.model);
  const input = parseRunInput(request.input);
  checkInputOptions(input, request.options);
  checkTableOptions(request.input, request.options);
  const out = parseLocation(request.out);
  if (input.kind === 'files') await preflightFiles(request, input.location, storage, signal);
  const why = await storage.whyUnwritable(out, signal);
  if (why !== undefined) {
    throw new BatchScorerError('E_OUTPUT', `cannot write run folders to ${formatLocation(out)}: ${why}; choose another --out`);
  }
}

/** preflight of an input of files: its dialect's flags together, and its files (the version dropped, for a run a drop started). */
async function preflightFiles(request: RunRequest, input: Location, storage: Storage, signal?: AbortSignal): Promise<void> {
  // Each flag is checked alone when parsed; whether they fit together (a quote that is not the delimiter) only here.
  try {
    checkDialect(dialectForName(formatLocation(input), request.options));
  } catch (err) {
    throw new UsageError(`--delimiter and --quote: ${errorMessage(err)}`);
  }
  const files = await listInputFiles(storage, input, signal).catch(inputMissing);
  // A file replaced after its drop was seen: that version is gone, and the new one has a run of its own.
  const dropped = request.trigger?.kind === 'event' || request.trigger?.kind === 'poll' ? request.trigger.object : undefined;
  const info = files[0];
  if (dropped && versionTag(info) !== dropped.etag) {
    throw new InputError(
      `${formatLocation(input)} was replaced after this run was started for it: the run is for version ${dropped.etag}, the file is now ${versionTag(info)}, which starts a run of its own`,
      'E_INPUT_CHANGED',
    );
  }
}
