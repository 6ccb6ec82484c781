import { createHash } from 'node:crypto';
import { BatchScorerError, NotFoundError, RunFolderError, UsageError } from '../errors.js';
import { RowSplitter, splitRawRows, type RawRow } from '../formats/index.js';
import { formatLocation, joinLocation, type Location, type Storage } from '../storage/index.js';
import { readManifest, type Manifest, type OutputFile } from './manifest.js';
import { runFiles } from './prepared-run.js';
import type { RunLayout } from './run-layout.js';
import { MALFORMED_ROW } from './score-segment.js';

/** A finished run that `rescore` patches, checked: its manifest, layout and files, and its quarantined rows. */
export interface PatchedRun {
  runId: string;
  folder: Location;
  manifest: Manifest & { counts: NonNullable<Manifest['counts']> };
  /** The run's layout: of a run over files, or over a database (whose layout keeps its columns' types). */
  layout: RunLayout;
  /** The output files (predictions), in the manifest's order: errors.jsonl aside. */
  outputs: OutputFile[];
  /** errors.jsonl as the manifest lists it. */
  errors: OutputFile;
  quarantined: QuarantinedRows;
}

/** The rows errors.jsonl holds, in its order (input order), a few numbers each: rows sent again are read again from a file. */
export interface QuarantinedRows {
  /** Each row's number (1-based, through every input file), ascending. */
  rows: number[];
  /** The physical line each starts on in its file. */
  lines: number[];
  /** The input file each is in: its index in the manifest's `inputs`. */
  files: number[];
  /** The sha256 of the input text of each row quarantined as malformed (never sent), by row number. */
  malformed: Map<number, string>;
  /**
   * For a run over a database: each row's key value as errors.jsonl wrote it (JSON), undefined
   * for a row quarantined as malformed, whose values were never read. Undefined for files.
   */
  keys?: (string | undefined)[];
}

/**
 * Reads and checks the run `rescore` patches (`<out>/<runId>/`): a run that succeeded (or was
 * accepted) with its outputs, its manifest keeping its layout, and every file its manifest lists
 * as the run wrote it (sha256 and size): a file changed since is E_RUN_STATE naming it, before
 * anything is sent. Another state is E_RUN_CONFLICT naming it. Reads errors.jsonl's rows as it
 * checks it.
 */
export async function readPatchedRun(storage: Storage, folder: Location, runId: string, signal?: AbortSignal): Promise<PatchedRun> {
  const where = formatLocation(folder);
  const manifest = await readManifest(storage, folder, signal);
  if (!manifest) throw new BatchScorerError('E_RUN_CONFLICT', `there is no manifest.json in ${where}: run ${runId} has not finished there, or never ran`);
  if (manifest.runId !== runId) throw new RunFolderError(`${where}/manifest.json names run ${manifest.runId}, not ${runId}: was it moved or edited?`);
  if (manifest.state !== 'succeeded') {
    const next = manifest.state === 'held' ? `accept it first (batch-scorer accept ${runId})` : 'only a run that succeeded has outputs to patch';
    throw new BatchScorerError('E_RUN_CONFLICT', `run ${runId} is ${manifest.state}: ${next}`);
  }
  if (!(await storage.exists(runFiles.success(folder), signal))) {
    throw new RunFolderError(`${where} has no _SUCCESS beside a manifest that says succeeded: was it deleted? Rescore patches whole runs only`);
  }
  const { layout, counts } = manifest;
  if (!layout || !counts) {
    throw new RunFolderError(
      `run ${runId} was finished by ${manifest.tool.name} ${manifest.tool.version}, whose manifest keeps no layout (the columns sent and written): rescore patches runs finished by this release or later; score the corrected input again instead`,
    );
  }
  if (layout.outputFormat === 'parquet') {
    throw new UsageError(`run ${runId} wrote Parquet (--format parquet): rescore patches CSV and JSON Lines outputs; score the corrected input again instead`);
  }
  if (layout.syntax === 'postgresql' && (!layout.types || !manifest.database)) {
    throw new RunFolderError(
      `run ${runId} read the database ${manifest.input.location}, and its manifest keeps no types of its columns (the release that finished it did not): score the corrected rows again instead`,
    );
  }
  const errors = manifest.outputs.find((o) => o.file === 'errors.jsonl');
  if (!errors) throw new RunFolderError(`the manifest of ${where} lists no errors.jsonl: was it edited?`);
  const outputs = manifest.outputs.filter((o) => o !== errors);
  for (const output of outputs) await checkListedFile(storage, folder, output, signal);
  const quarantined = await readQuarantined(storage, folder, errors, manifest, signal);
  if (quarantined.rows.length !== counts.rowsQuarantined) {
    throw new RunFolderError(
      `${where}/errors.jsonl holds ${quarantined.rows.length} rows where its manifest counts ${counts.rowsQuarantined} quarantined: was it edited?`,
    );
  }
  return { runId, folder, manifest: { ...manifest, counts }, layout, outputs, errors, quarantined };
}

/** A file the manifest lists, by its name below the run folder: never one outside it. */
export function listedFile(folder: Location, output: OutputFile): Location {
  if (output.file.split('/').some((part) => part === '..' || part === '' || part === '.')) {
    throw new RunFolderError(`the manifest of ${formatLocation(folder)} lists an output "${output.file}" outside its folder: was it edited?`);
  }
  return joinLocation(folder, output.file);
}

/** Hashes a file's stored bytes as they are read; `check` refuses a file that is not what its manifest says. */
export class StoredHash {
  private readonly hash = createHash('sha256');
  private bytes = 0;

  constructor(
    private readonly location: Location,
    private readonly listed: OutputFile,
  ) {}

  add(chunk: Buffer): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
  }

  /** E_RUN_STATE naming the file when its bytes are not those the run wrote. */
  check(): void {
    if (this.bytes === this.listed.bytes && this.hash.digest('hex') === this.listed.sha256) return;
    throw new RunFolderError(
      `${formatLocation(this.location)} changed since its run wrote it (its size or sha256 is not its manifest's): rescore patches outputs only as their run wrote them`,
    );
  }
}

/** The stored bytes of a file the manifest lists, each chunk hashed; checked against the manifest once read whole. */
export async function* listedBytes(storage: Storage, folder: Location, output: OutputFile, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const location = listedFile(folder, output);
  const hash = new StoredHash(location, output);
  const stream = await storage.read(location, { signal }).catch((err: unknown) => {
    throw err instanceof NotFoundError ? new RunFolderError(`${formatLocation(location)} is missing from its run folder: was it deleted?`, err) : err;
  });
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    hash.add(chunk);
    yield chunk;
  }
  hash.check();
}

/** Reads a file the manifest lists through, checking it (see listedBytes). */
export async function checkListedFile(storage: Storage, folder: Location, output: OutputFile, signal?: AbortSignal): Promise<void> {
  for await (const chunk of listedBytes(storage, folder, output, signal)) void chunk;
}

/** The lines of a run's errors.jsonl, checked as it is read (see listedBytes). */
export function errorsLines(storage: Storage, folder: Location, errors: OutputFile, signal?: AbortSignal): AsyncGenerator<RawRow[]> {
  return splitRawRows(listedBytes(storage, folder, errors, signal), new RowSplitter('jsonl'));
}

/** One line of errors.jsonl, as the run wrote it. */
interface ErrorLine {
  row: number;
  line: number;
  file?: string;
  title: string | null;
}

async function readQuarantined(storage: Storage, folder: Location, errors: OutputFile, manifest: Manifest, signal?: AbortSignal): Promise<QuarantinedRows> {
  const where = formatLocation(listedFile(folder, errors));
  const files = new Map(manifest.inputs.map((input, i) => [input.location, i]));
  const key = manifest.database?.key;
  const found: QuarantinedRows = { rows: [], lines: [], files: [], malformed: new Map(), ...(key !== undefined && { keys: [] }) };
  for await (const lines of errorsLines(storage, folder, errors, signal)) {
    for (const raw of lines) {
      const line = parsedLine(raw.text());
      const file = line?.file === undefined ? 0 : files.get(line.file);
      const before = found.rows.at(-1) ?? 0;
      if (!line || !Number.isInteger(line.row) || line.row <= before || file === undefined) {
        throw new RunFolderError(`${where}: line ${raw.line} is not a line its run wrote (rows in input order, each in a file of the run): was it edited?`);
      }
      found.rows.push(line.row);
      found.lines.push(line.line);
      found.files.push(file);
      if (line.title === MALFORMED_ROW) found.malformed.set(line.row, inputDigest(JSON.stringify(line.input)));
      found.keys?.push(line.title === MALFORMED_ROW ? undefined : keyValue(line.input, key!));
    }
  }
  return found;
}

/** A row's key value as JSON, from its input (its values by column); undefined where the input holds none. */
function keyValue(input: unknown, key: string): string | undefined {
  if (typeof input !== 'object' || input === null || !Object.hasOwn(input, key)) return undefined;
  return JSON.stringify((input as Record<string, unknown>)[key]);
}

/** A line of errors.jsonl, or undefined where it is not JSON. */
function parsedLine(text: string): (ErrorLine & { input: unknown }) | undefined {
  try {
    return JSON.parse(text) as ErrorLine & { input: unknown };
  } catch {
    return undefined;
  }
}

/** What tells a row's input apart from another's: the sha256 of its value as JSON.stringify writes it. */
export function inputDigest(json: string): string {
  return createHash('sha256').update(json).digest('hex');
}
