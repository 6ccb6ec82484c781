import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { formatDatabaseUrl, parseDatabaseUrl, sameDatabase, type DatabaseUrl } from '../database/index.js';
import { BatchScorerError } from '../errors.js';
import { formatLocation, type Location, parseLocation, type S3Location, type StorageGuard } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { parseRunInput } from './run-input.js';

/**
 * What the runs of a deployment may reach, as data: where they read, where they write, and which
 * model services they send rows to. Whoever holds API_TOKEN, or can write to Redis, can submit a
 * run; this bounds what such a run can touch. A list left unset allows everything of its kind, so
 * `score` on a user's own machine needs no policy.
 */
export interface DeploymentPolicy {
  /** INPUT_ROOTS: local folders and `s3://bucket/prefix`es inputs may be read from; unset: anywhere. */
  inputRoots?: readonly Location[];
  /**
   * The database URLs of INPUT_ROOTS (`postgresql://host:5432/db`): the databases a run may read
   * rows from; unset (INPUT_ROOTS unset): any; empty (INPUT_ROOTS names none): none.
   */
  inputDatabases?: readonly DatabaseUrl[];
  /** OUTPUT_ROOTS: where run folders may be written (and read back); unset: anywhere. */
  outputRoots?: readonly Location[];
  /**
   * The database URLs of OUTPUT_ROOTS (`postgresql://host:5432/db`): the databases `--out-database`
   * may name; unset (OUTPUT_ROOTS unset): any; empty (OUTPUT_ROOTS names none): none.
   */
  outputDatabases?: readonly DatabaseUrl[];
  /**
   * SERVICE_URLS and the deployment's own service (MODEL_SERVICE_URL), as `serviceBase` writes
   * them: the only services a run may name; unset: any.
   */
  serviceUrls?: readonly string[];
}

/** What a run would reach: its input and output locations as written, the service it names (unset: the worker's own, always allowed), and the database it writes rows to. */
export interface RunReach {
  input: string;
  out: string;
  service?: string;
  /** The database the run writes rows to, as written (see outDatabaseOf); unset: none. */
  outDatabase?: string;
}

/** How much of a text a refusal shows, in bytes: a location or URL a caller wrote may be any length. */
const SHOWN_BYTES = 256;

/** The settings a policy leaves unset, by name: what `serve` warns of, and what it needs set to listen beyond loopback. */
export function openSettings(policy: DeploymentPolicy): string[] {
  const open: [string, unknown][] = [
    ['INPUT_ROOTS', policy.inputRoots],
    ['OUTPUT_ROOTS', policy.outputRoots],
    ['SERVICE_URLS', policy.serviceUrls],
  ];
  return open.filter(([, value]) => value === undefined).map(([name]) => name);
}

/**
 * A service base URL in the one form policies compare: scheme, host and port as URL writes them
 * (lower case, no default port), then the path without trailing slashes.
 */
export function serviceBase(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

/** Refuses (E_NOT_ALLOWED) a run whose input, output or service the policy does not allow; reads nothing. */
export async function checkRun(policy: DeploymentPolicy, reach: RunReach): Promise<void> {
  if (reach.service !== undefined) checkService(policy, reach.service);
  const input = parseRunInput(reach.input);
  if (input.kind === 'database') checkInputDatabase(policy, input.database);
  else await checkInput(policy, input.location);
  await checkOutput(policy, parseLocation(reach.out));
  if (reach.outDatabase !== undefined) checkOutputDatabase(policy, parseDatabaseUrl(reach.outDatabase));
}

/** Refuses a database to write rows to that OUTPUT_ROOTS does not list (host, port and database compared, see sameDatabase). */
export function checkOutputDatabase(policy: DeploymentPolicy, db: DatabaseUrl): void {
  checkListedDatabase(db, policy.outputDatabases, { setting: 'OUTPUT_ROOTS', named: '--out-database', fix: 'name' });
}

/** Refuses a database input INPUT_ROOTS does not list (host, port and database compared, see sameDatabase). */
export function checkInputDatabase(policy: DeploymentPolicy, db: DatabaseUrl): void {
  checkListedDatabase(db, policy.inputDatabases, { setting: 'INPUT_ROOTS', named: 'input', fix: 'read' });
}

/**
 * Refuses a database the setting's list does not hold (unset: any is allowed); the refusal names
 * the database as `named`, the setting, and what to do (`fix` one it lists, or add it).
 */
function checkListedDatabase(db: DatabaseUrl, allowed: readonly DatabaseUrl[] | undefined, how: { setting: string; named: string; fix: string }): void {
  if (allowed === undefined || allowed.some((root) => sameDatabase(root, db))) return;
  const listed = allowed.length === 0 ? 'lists no database' : `lists ${allowed.map(formatDatabaseUrl).join(', ')}`;
  throw new BatchScorerError(
    'E_NOT_ALLOWED',
    `${how.named} ${formatDatabaseUrl(db)} is not allowed: ${how.setting} ${listed}; ${how.fix} one it lists, or add it to ${how.setting}`,
  );
}

/** Refuses a model service that is not the deployment's own or in SERVICE_URLS. */
export function checkService(policy: DeploymentPolicy, url: string): void {
  if (policy.serviceUrls === undefined || policy.serviceUrls.includes(serviceBase(url))) return;
  throw new BatchScorerError(
    'E_NOT_ALLOWED',
    `service ${shown(url)} is not allowed by SERVICE_URLS (${policy.serviceUrls.join(', ')}): name one of those, or add it to SERVICE_URLS`,
  );
}

/** Refuses an input location outside INPUT_ROOTS. */
export function checkInput(policy: DeploymentPolicy, loc: Location): Promise<void> {
  return checkUnder('input', loc, policy.inputRoots, 'INPUT_ROOTS');
}

/** Refuses an output location (a run folder, or a file or folder in one) outside OUTPUT_ROOTS. */
export function checkOutput(policy: DeploymentPolicy, loc: Location): Promise<void> {
  return checkUnder('output', loc, policy.outputRoots, 'OUTPUT_ROOTS');
}

/** Refuses a read outside both lists: runs read their inputs, and their own run folders back. */
export function checkRead(policy: DeploymentPolicy, loc: Location): Promise<void> {
  if (policy.inputRoots === undefined || policy.outputRoots === undefined) return Promise.resolve();
  return checkUnder('location', loc, [...policy.inputRoots, ...policy.outputRoots], 'INPUT_ROOTS or OUTPUT_ROOTS');
}

/**
 * The policy as a storage guard: every read within INPUT_ROOTS or OUTPUT_ROOTS, every write and
 * removal within OUTPUT_ROOTS, so that a path no check before it saw (a symbolic link inside an
 * input folder, a run folder named by forged job data) cannot lead a run outside.
 */
export function storageGuard(policy: DeploymentPolicy): StorageGuard {
  return { read: (loc) => checkRead(policy, loc), listed: (folder, file) => checkListed(policy, folder, file), write: (loc) => checkOutput(policy, loc) };
}

/**
 * Refuses a file a listing found outside the listed folder's real path (a symbolic link leading
 * out of it), once INPUT_ROOTS bounds what runs read: otherwise a link inside an input folder
 * would read any file, or another run's outputs, whatever the other settings say.
 */
async function checkListed(policy: DeploymentPolicy, folder: Location, file: Location): Promise<void> {
  await checkRead(policy, file);
  if (policy.inputRoots === undefined || folder.kind !== 'file' || file.kind !== 'file') return;
  if (pathUnder(await resolvedPath(file.path), await resolvedPath(folder.path))) return;
  throw new BatchScorerError(
    'E_NOT_ALLOWED',
    `${shown(file.path)}, found in ${shown(folder.path)}, leads outside that folder through a symbolic link, which INPUT_ROOTS does not allow: copy the file into the folder instead`,
  );
}

async function checkUnder(what: string, loc: Location, roots: readonly Location[] | undefined, setting: string): Promise<void> {
  if (roots === undefined) return;
  const refuse = (why: string) =>
    new BatchScorerError(
      'E_NOT_ALLOWED',
      `${what} ${shown(formatLocation(loc))} ${why}: use a location under ${roots.map(formatLocation).join(', ')}, or add its folder to ${setting}`,
    );
  if (loc.kind === 's3') {
    // S3 keeps `..` as part of a key, but a gateway or an S3-compatible server may resolve it as a path.
    if (hasDotSegment(loc.key)) throw refuse(`has a "." or ".." in its key, outside ${setting}`);
    if (!roots.some((root) => root.kind === 's3' && s3Under(loc, root))) throw refuse(`is outside ${setting}`);
    return;
  }
  const real = await resolvedPath(loc.path);
  const fileRoots = await Promise.all(roots.flatMap((root) => (root.kind === 'file' ? [resolvedPath(root.path)] : [])));
  if (fileRoots.some((root) => pathUnder(real, root))) return;
  const lexically = roots.some((root) => root.kind === 'file' && pathUnder(path.resolve(loc.path), path.resolve(root.path)));
  throw refuse(lexically ? `leads outside ${setting} through a symbolic link` : `is outside ${setting}`);
}

/**
 * A local path with `..` and symbolic links resolved as the system would open it: the real path
 * of its longest part that exists, then the rest (which does not exist yet, so links none).
 */
async function resolvedPath(text: string): Promise<string> {
  const rest: string[] = [];
  for (let at = path.resolve(text); ;) {
    try {
      return path.join(await realpath(at), ...rest);
    } catch {
      // Missing, or not searchable by this process: then not openable by it either, and its parent decides.
      const parent = path.dirname(at);
      if (parent === at) return path.join(at, ...rest);
      rest.unshift(path.basename(at));
      at = parent;
    }
  }
}

function pathUnder(candidate: string, root: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);
}

/** At a `/` boundary: `s3://b/runs` holds `runs/1`, never `runs10/1`; a root without a key holds the whole bucket. */
function s3Under(loc: S3Location, root: S3Location): boolean {
  const prefix = root.key.replace(/\/+$/, '');
  return loc.bucket === root.bucket && (prefix === '' || loc.key === prefix || loc.key.startsWith(`${prefix}/`));
}

function hasDotSegment(key: string): boolean {
  return key.split('/').some((segment) => segment === '.' || segment === '..');
}

/** A caller's text as a refusal shows it: whole when short, otherwise its start and how much was left out. */
function shown(text: string): string {
  return excerpt(text, SHOWN_BYTES);
}
