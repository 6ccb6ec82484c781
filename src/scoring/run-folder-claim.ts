import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { BatchScorerError, errorCode, errorMessage, type ErrorCode } from '../errors.js';
import { basename, formatLocation, type Location, readTextIfExists, type Storage } from '../storage/index.js';
import { runFiles, storedRequestSchema } from './prepared-run.js';
import type { RunRequest } from './run-request.js';
import { readRunFile, runFileText } from './run-file.js';

/**
 * `_work/claim.json`: the run that made the folder and what it was asked, written before anything
 * else of the run, and only where no file is. Planning that fails after it leaves a folder whose
 * claim says which request may start it again.
 */
const claimSchema = z.object({ runId: z.string(), request: storedRequestSchema, claimedAt: z.string() });

/**
 * The files that say whose a run folder is, by the run id they hold: the claim, and for folders of
 * releases that wrote none (or a run that succeeded, whose `_work` is gone) run.json and the manifest.
 */
const MARKERS = [runFiles.claim, runFiles.prepared, runFiles.manifest];

/** Files a refusal names: enough to recognise the folder by. */
const FILES_SHOWN = 3;

/**
 * How long a folder that holds no file yet is not empty is watched before it is refused, and how
 * often it is looked at: a claim is written to a half-written file first (local storage), so a run
 * of the same id starting at that moment sees a folder with nothing in it but that, for the
 * milliseconds the write takes. A FIFO, or a half-written file a crash left, stays, and is refused.
 */
const CLAIM_WRITE_MS = 2_000;
const CLAIM_LOOK_MS = 25;

/** Another's folder: a few of the files in it, and the marker that names another run, if one does. */
interface Foreign {
  files: string[];
  otherRun?: string;
}

/**
 * Makes the run folder `<out>/<runId>/` this run's, or finds that it is, before the run writes
 * anything in it. A folder is the run's when a marker in it names the run id (an earlier attempt,
 * a resume, a queue retry); a folder without any file is claimed by creating `_work/claim.json`
 * where none is, so of two runs of one id starting at once, one makes the claim and the other
 * finds it. Any other folder is refused (E_OUTPUT, naming it) and left exactly as it was; so is a
 * location where no folder can be made.
 * @returns the request an earlier claim stored, to compare with this one; undefined when this call
 *   made the claim, or the folder's run is of a release that wrote none
 */
export async function claimRunFolder(
  storage: Storage,
  folder: Location,
  runId: string,
  request: RunRequest,
  signal?: AbortSignal,
): Promise<RunRequest | undefined> {
  let found = await settledStanding(storage, folder, runId, signal);
  if (found === 'empty') {
    const claim = runFileText({ runId, request, claimedAt: new Date().toISOString() }, true);
    if (await makeClaim(storage, folder, claim, signal)) return undefined;
    // Another run of this id made its claim between the look and the write: whose it is decides.
    found = await settledStanding(storage, folder, runId, signal);
  }
  if (found === 'empty') {
    throw new BatchScorerError(
      'E_STORAGE',
      `${formatLocation(runFiles.claim(folder))} was there a moment ago, made by another run of this id, and is gone: try again`,
    );
  }
  if (found !== 'own') throw foreignFolder(folder, runId, found);
  return readClaimedRequest(storage, folder, signal);
}

/** Refuses a run folder that is not the run's (E_OUTPUT), reading only: a worker checks it before it reads the run's files. */
export async function checkRunFolder(storage: Storage, folder: Location, runId: string, signal?: AbortSignal): Promise<void> {
  const found = await standing(storage, folder, runId, signal);
  if (typeof found === 'object') throw foreignFolder(folder, runId, found);
}

/** Whether a marker in the folder names the run: only then is a failure recorded there. */
export async function ownsRunFolder(storage: Storage, folder: Location, runId: string, signal?: AbortSignal): Promise<boolean> {
  for (const marker of MARKERS) if ((await markedRunId(storage, marker(folder), signal)) === runId) return true;
  return false;
}

/** The folder's claim (the run that made it, what it was asked, and when), if it has one. */
export function readClaim(storage: Storage, folder: Location, signal?: AbortSignal): Promise<z.output<typeof claimSchema> | undefined> {
  return readRunFile(storage, runFiles.claim(folder), claimSchema, signal);
}

/** The request stored by the folder's claim, if it has one. */
export async function readClaimedRequest(storage: Storage, folder: Location, signal?: AbortSignal): Promise<RunRequest | undefined> {
  return (await readClaim(storage, folder, signal))?.request;
}

/**
 * What the folder is to the run: empty (no file below it, or no folder), its own, or another's.
 * Listed before its markers are read: a run's claim is its first file, so a run seeing any file of
 * another attempt of its id also finds that attempt's claim.
 */
async function standing(storage: Storage, folder: Location, runId: string, signal?: AbortSignal): Promise<'own' | 'empty' | Foreign> {
  // Empty means no entry but folders: a FIFO or a half-written file in it is someone's too.
  if (await storage.isEmpty(folder, signal)) return 'empty';
  const files: string[] = [];
  const prefix = formatLocation(folder).length + 1;
  for await (const { location } of storage.list(folder, signal)) {
    files.push(formatLocation(location).slice(prefix));
    if (files.length > FILES_SHOWN) break;
  }
  let otherRun: string | undefined;
  for (const marker of MARKERS) {
    const id = await markedRunId(storage, marker(folder), signal);
    if (id === runId) return 'own';
    if (id !== undefined) otherRun ??= basename(marker(folder));
  }
  return { files, ...(otherRun !== undefined && { otherRun }) };
}

/**
 * The folder's standing once no claim is being written in it: a folder holding nothing but
 * entries that are no files (see CLAIM_WRITE_MS) is looked at again until it changes or the time is up.
 */
async function settledStanding(storage: Storage, folder: Location, runId: string, signal?: AbortSignal): Promise<'own' | 'empty' | Foreign> {
  const deadline = Date.now() + CLAIM_WRITE_MS;
  for (;;) {
    const found = await standing(storage, folder, runId, signal);
    const nothingYet = typeof found === 'object' && found.files.length === 0 && found.otherRun === undefined;
    if (!nothingYet || Date.now() >= deadline) return found;
    await sleep(CLAIM_LOOK_MS, undefined, { signal });
  }
}

/**
 * The run id a marker file names: undefined when there is no such file, null when there is one
 * that names none (not JSON, not a run file), which is no claim of any run.
 */
async function markedRunId(storage: Storage, loc: Location, signal?: AbortSignal): Promise<string | null | undefined> {
  // Looked at before it is read: a FIFO of that name in a folder not yet known to be the run's would block the read for ever.
  if (!(await storage.exists(loc, signal))) return undefined;
  const text = await readTextIfExists(storage, loc, signal);
  if (text === undefined) return undefined;
  try {
    const json: unknown = JSON.parse(text);
    const runId = typeof json === 'object' && json !== null && 'runId' in json ? json.runId : undefined;
    return typeof runId === 'string' ? runId : null;
  } catch {
    return null;
  }
}

/** Creates the claim; a location where the folder cannot be made (a file in the way, /proc, no permission) is the output's fault. */
async function makeClaim(storage: Storage, folder: Location, claim: string, signal?: AbortSignal): Promise<boolean> {
  try {
    return await storage.create(runFiles.claim(folder), claim, signal);
  } catch (err) {
    if (errorCode(err) !== 'E_STORAGE_REFUSED') throw err;
    throw new BatchScorerError('E_OUTPUT', `run folder ${formatLocation(folder)}: ${errorMessage(err)}; choose another --out`, { cause: err });
  }
}

function foreignFolder(folder: Location, runId: string, found: Foreign): BatchScorerError {
  const shown =
    found.files.length === 0
      ? 'it holds only folders or special files'
      : found.files.slice(0, FILES_SHOWN).join(', ') + (found.files.length > FILES_SHOWN ? ', ...' : '');
  const whose = found.otherRun !== undefined ? `its ${found.otherRun} names another run` : `no run ${runId} wrote its files`;
  return new BatchScorerError(
    'E_OUTPUT',
    `${formatLocation(folder)} already exists and is not run ${runId}'s folder: ${whose} (${shown}); a run writes only into a folder it made, so this one is left as it is: choose another --run-id or --out`,
  );
}

/**
 * Whether an error raised while a run plans is a refusal rather than a failed run: a flag found
 * wrong once the input's columns are known (an unknown --keep-columns column) says the command
 * must change, so the claim is withdrawn and no folder is left, as for any refused run.
 */
export function refusedWhilePlanning(code: ErrorCode): boolean {
  return code === 'E_USAGE';
}

/**
 * Removes what a run refused while planning wrote: its claim, its describe snapshot and the staged
 * copies of its inputs, and the folders this leaves empty (the run folder too, when nothing else
 * is in it). Only those files, by name: anything else stays.
 */
export function withdrawClaim(storage: Storage, folder: Location): Promise<void> {
  const root = formatLocation(folder);
  const below = (loc: Location) => formatLocation(loc).slice(root.length + 1);
  const named = new Set([below(runFiles.claim(folder)), below(runFiles.attempt(folder)), below(runFiles.describe(folder))]);
  const staged = below(runFiles.stagedInput(folder, 0)).replace(/[^/]*$/, '');
  return storage.removeFiles(folder, (name) => named.has(name) || (name.startsWith(staged) && !name.slice(staged.length).includes('/')));
}
