import { z } from 'zod';
import { formatIssues } from '../config/index.js';
import { errorMessage, RunFolderError } from '../errors.js';
import { formatLocation, type Location, readTextIfExists, type Storage, type WriteOptions } from '../storage/index.js';
import { TOOL } from '../version.js';

/**
 * The shape of the files a run keeps (`_work/run.json`, the segments' done markers and
 * manifest.json), written into each as `schemaVersion` beside the release that wrote it (`tool`),
 * so a run folder outlives upgrades. batch-scorer 0.1.0 wrote no version: its files are read as
 * version 1, whose content is the same. A field added later gets a zod default saying what the
 * files without it meant; a change older files cannot be read through raises the version.
 * Version 2 (0.3.0): a run's input is a list of files (`input.files`), and its output has a layout
 * (`output`); version 1 files are read as one file and every input column.
 */
export const SCHEMA_VERSION = 2;

/** The release whose files carry no schemaVersion. */
const UNVERSIONED_RELEASE = '0.1.0';

const REMEDY = 'score again with another --run-id, or move the run folder aside and start the run anew';

/** The stamp every run file carries (both absent in files of batch-scorer 0.1.0, `tool` absent in its run.json and done markers). */
const stampSchema = z.object({
  schemaVersion: z.int().min(1).optional(),
  tool: z.object({ name: z.string(), version: z.string() }).optional(),
});

/** Issues beyond these are counted, not listed: a foreign file would otherwise fill a screen. */
const ISSUES_SHOWN = 3;

/**
 * A run file's content, checked against its schema, or undefined when the file does not exist.
 * A file that is not JSON, not a run file, or of a schema version this release does not know is
 * refused with E_RUN_STATE naming it, never passed on to fail later.
 */
export async function readRunFile<T>(storage: Storage, loc: Location, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T | undefined> {
  const text = await readTextIfExists(storage, loc, signal);
  if (text === undefined) return undefined;
  const where = formatLocation(loc);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new RunFolderError(`${where} is damaged: it is not JSON (${errorMessage(err)}); ${REMEDY}`, err);
  }
  const stamp = stampSchema.safeParse(json);
  if (!stamp.success) throw new RunFolderError(`${where} is not a batch-scorer run file (${problems(stamp.error)}); ${REMEDY}`);
  const { schemaVersion, tool } = stamp.data;
  const writer = `${tool?.name ?? TOOL.name} ${tool?.version ?? (schemaVersion === undefined ? UNVERSIONED_RELEASE : 'of unknown version')}`;
  const origin =
    schemaVersion === undefined ? `taken as written by ${writer} (it has no schemaVersion)` : `written by ${writer} (schema version ${schemaVersion})`;
  const versions = `${where}: ${origin}, this is ${TOOL.name} ${TOOL.version}`;
  if (schemaVersion !== undefined && schemaVersion > SCHEMA_VERSION) {
    throw new RunFolderError(`${versions}, which reads schema versions up to ${SCHEMA_VERSION}: resume the run with ${writer} or later, or ${REMEDY}`);
  }
  const content = schema.safeParse(json);
  if (content.success) return content.data;
  throw new RunFolderError(`${versions}; it cannot be read (${problems(content.error)}): was it edited or damaged? ${REMEDY}`);
}

/** A run file that must exist: its absence is E_RUN_STATE (the run folder lost it), never "no such input". */
export async function requireRunFile<T>(storage: Storage, loc: Location, schema: z.ZodType<T>, signal?: AbortSignal): Promise<T> {
  const content = await readRunFile(storage, loc, schema, signal);
  if (content === undefined) throw missingRunFile(loc);
  return content;
}

/** The error for a run file that should be there and is not. */
export function missingRunFile(loc: Location): RunFolderError {
  return new RunFolderError(`${formatLocation(loc)} is missing from its run folder: was it deleted? ${REMEDY}`);
}

/** Writes a run file, stamped with this release and its schema version; `pretty` for files people read. */
export function writeRunFile(storage: Storage, loc: Location, content: object, options: WriteOptions & { pretty?: boolean } = {}): Promise<unknown> {
  const { pretty = false, ...write } = options;
  return storage.write(loc, runFileText(content, pretty), write);
}

/** A run file's text: its content stamped with this release and its schema version. */
export function runFileText(content: object, pretty = false): string {
  const stamped = { schemaVersion: SCHEMA_VERSION, tool: TOOL, ...content };
  return pretty ? `${JSON.stringify(stamped, null, 2)}\n` : JSON.stringify(stamped);
}

function problems(error: z.ZodError): string {
  const more = error.issues.length - ISSUES_SHOWN;
  return formatIssues(new z.ZodError(error.issues.slice(0, ISSUES_SHOWN))) + (more > 0 ? `; and ${more} more` : '');
}
