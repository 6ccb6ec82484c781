import { Readable } from 'node:stream';
import { RunFolderError } from '../errors.js';
import { decodeToUtf8, isUtf8 } from '../formats/index.js';
import type { Logger } from '../log.js';
import { formatLocation, type Location, type Storage } from '../storage/index.js';
import { outputGroups, records, writeShards, type OutputGroup } from './assemble.js';
import { gunzip } from './input-bytes.js';
import type { OutputFile } from './manifest.js';
import { listedBytes, type PatchedRun } from './patched-run.js';
import type { PreparedRun } from './prepared-run.js';
import { stageRescoredTable } from './rescore-table.js';
import type { SegmentDone } from './segment-done.js';
import type { StagedTable } from './table-load.js';

/** The rows a rescore scored, ready to be published as a new version of the patched run's outputs. */
export interface RescoredRows {
  storage: Storage;
  patched: PatchedRun;
  /** The new version's run: its folder, options and layout (the patched run's). */
  run: PreparedRun;
  /**
   * The rows scored, a part per input file that had some, in input order: the part's records
   * (in the output's syntax, without a header), the input file, and the rows (1-based numbers,
   * ascending) the records are of, one each.
   */
  parts: { location: Location; file: number; rows: number[] }[];
  /** The version's segments' done markers, by segment: the parts' pieces and rows scored. */
  done: SegmentDone[];
  /** The version's logger: a table's staging and publish say what they did. */
  log: Logger;
  signal?: AbortSignal;
}

/**
 * A version's outputs once written: the files the manifest lists (none for a table), and for a
 * run that wrote into a table its rows staged, which the version publishes with its manifest.
 */
export interface RescoredOutputs {
  files: OutputFile[];
  table?: StagedTable;
}

/** Writes or stages a version's outputs (see rescorePublisher). */
export type PublishRescored = (rescored: RescoredRows) => Promise<RescoredOutputs>;

/**
 * How a patched run's rows are published: into files in the new version's folder (see
 * publishToFiles), or, for a run that wrote into a table, staged to be added to that table in the
 * one transaction that records the version (see stageRescoredTable).
 */
export function rescorePublisher(run: PreparedRun): PublishRescored {
  if (run.output.tableColumns) return async (rescored) => ({ files: [], table: await stageRescoredTable(rescored) });
  return async (rescored) => ({ files: await publishToFiles(rescored) });
}

/**
 * Writes the new version's output files: each of the patched run's outputs streamed record by
 * record, its bytes copied as they are (never parsed and written anew), with each rescored row's
 * record put at its place in input order, and cut into files as the run cut them
 * (--max-rows-per-file, --output-per-file). The files read are checked against the patched run's
 * manifest as they are read (E_RUN_STATE if one changed since it was checked). The outputs are
 * those a run that had scored the rows the first time would have written: byte for byte, gzipped
 * or not.
 */
export async function publishToFiles(rescored: RescoredRows): Promise<OutputFile[]> {
  const { patched, run } = rescored;
  const groups = outputGroups(run);
  const files = groupFiles(patched, run, groups);
  const outputs: OutputFile[] = [];
  // Records of the groups before: a row's place in the whole output, less those, is its place in its group's.
  let before = 0;
  for (const [g, group] of groups.entries()) {
    const old = files[g];
    const parts = rescored.parts.filter((p) => run.request.options.outputPerFile !== true || p.file === g);
    outputs.push(...(await writeShards(rescored.storage, run, group.stem, patchedRecords(rescored, old, parts, before), rescored.signal)));
    before += old.reduce((n, f) => n + f.rows, 0);
  }
  return outputs;
}

/** The patched run's output files of each group, in the manifest's order: every output in exactly one. */
function groupFiles(patched: PatchedRun, run: PreparedRun, groups: OutputGroup[]): OutputFile[][] {
  const extension = `${run.outputFormat}${run.output.compress === 'gzip' ? '\\.gz' : ''}`;
  // Cut into files of --max-rows-per-file rows, an output's files are numbered: `<stem>-00000.<ext>`, ...
  const shard = run.request.options.maxRowsPerFile === undefined ? '' : '-\\d{5}';
  const named = groups.map((g) => new RegExp(`^${regexLiteral(g.stem)}${shard}\\.${extension}$`));
  const files = groups.map((_, g) => patched.outputs.filter((o) => named[g].test(o.file)));
  const listed = files.flat().length;
  if (listed !== patched.outputs.length || files.some((f) => f.length === 0)) {
    throw new RunFolderError(
      `the manifest of ${formatLocation(patched.folder)} lists outputs (${patched.outputs.map((o) => o.file).join(', ')}) other than its options and input make: was it edited?`,
    );
  }
  return files;
}

/** Text as a regular expression matching it alone. */
function regexLiteral(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * One output's records: the patched run's, from its files in order (each file's CSV header read
 * past), with the rescored rows' records from `parts` at their places. A rescored row `r` stood
 * where errors.jsonl holds it: among the run's output records, after the `r - 1` rows before it
 * less those quarantined, `before` of them in the outputs of earlier groups.
 */
async function* patchedRecords(rescored: RescoredRows, old: OutputFile[], parts: RescoredRows['parts'], before: number): AsyncGenerator<Buffer[]> {
  const { storage, patched, run, signal } = rescored;
  const syntax = run.outputFormat === 'csv' ? 'csv' : 'jsonl';
  const { rows: quarantined } = patched.quarantined;
  const inserts = insertions(storage, parts, syntax, signal);
  let k = 0;
  const placeOf = (row: number) => {
    while (quarantined[k] < row) k++;
    return row - 1 - k - before;
  };
  let next = await inserts.next();
  let at = 0;
  for (const file of old) {
    let header = syntax === 'csv';
    for await (const lines of fileRecords(storage, patched, run, file, syntax, signal)) {
      const out: Buffer[] = [];
      for (const line of lines) {
        if (header) {
          header = false;
          continue;
        }
        while (!next.done && placeOf(next.value.row) === at) {
          out.push(next.value.record);
          next = await inserts.next();
        }
        out.push(line);
        at++;
      }
      yield out;
    }
  }
  const rest: Buffer[] = [];
  for (; !next.done; next = await inserts.next()) {
    if (placeOf(next.value.row) !== at) throw changedOutputs(patched, `row ${next.value.row} has no place among its ${at} records`);
    rest.push(next.value.record);
  }
  if (rest.length > 0) yield rest;
}

/** The rescored rows' records, one at a time with their rows, from the parts in order. */
async function* insertions(
  storage: Storage,
  parts: RescoredRows['parts'],
  syntax: 'csv' | 'jsonl',
  signal?: AbortSignal,
): AsyncGenerator<{ row: number; record: Buffer }> {
  for (const part of parts) {
    let i = 0;
    for await (const lines of records(await storage.read(part.location, { signal }), syntax)) {
      for (const record of lines) {
        if (i >= part.rows.length) throw new RunFolderError(`${formatLocation(part.location)} holds more records than the rows it scored: was it changed?`);
        yield { row: part.rows[i++], record };
      }
    }
    if (i !== part.rows.length)
      throw new RunFolderError(`${formatLocation(part.location)} holds ${i} records for ${part.rows.length} rows scored: was it changed?`);
  }
}

/** A patched run's output file's records, its stored bytes checked (see listedBytes), inflated and decoded as it was written. */
async function* fileRecords(
  storage: Storage,
  patched: PatchedRun,
  run: PreparedRun,
  file: OutputFile,
  syntax: 'csv' | 'jsonl',
  signal?: AbortSignal,
): AsyncGenerator<Buffer[]> {
  const stored = listedBytes(storage, patched.folder, file, signal);
  const inflated = file.file.endsWith('.gz') ? gunzip(Readable.from(stored), file.file) : stored;
  const encoding = run.request.options.outputEncoding;
  let rows = 0;
  for await (const lines of records(isUtf8(encoding) ? inflated : decodeToUtf8(inflated, encoding), syntax)) {
    rows += lines.length;
    yield lines;
  }
  const expected = file.rows + (syntax === 'csv' ? 1 : 0);
  if (rows !== expected) throw changedOutputs(patched, `${file.file} holds ${rows} records where its manifest says ${expected}`);
}

function changedOutputs(patched: PatchedRun, what: string): RunFolderError {
  return new RunFolderError(`the outputs of run ${patched.runId} are not what its manifest says (${what}): were they changed after the run?`);
}
