import type { Readable } from 'node:stream';
import { NotFoundError, RunFolderError, UsageError } from '../errors.js';
import { createRowWriter, loadParquetOutput, type ParquetOutput, type ParquetOutputColumn, RowSplitter, splitRawRows } from '../formats/index.js';
import { basename, formatLocation, type Location, type Storage } from '../storage/index.js';
import { TOOL } from '../version.js';
import { OutputFileWriter } from './output-file.js';
import type { OutputFile } from './manifest.js';
import { runFiles, type OutputFormat, type PreparedRun } from './prepared-run.js';
import type { SegmentCounts } from './segment-counts.js';
import { piecesOf, type SegmentDone } from './segment-done.js';

/** An output of the run and the segments whose rows it holds: `predictions`, or one per input file. */
export interface OutputGroup {
  /** The output's name without its extension: `predictions`, or `predictions/<input file's name>`. */
  stem: string;
  segments: number[];
}

/** Extensions a per-file output's name drops from its input file's name. */
const INPUT_EXTENSIONS = /(\.(csv|tsv|tab|txt|jsonl|ndjson|json|parquet|pq))?(\.gz)?$/i;

/**
 * The run's outputs: one `predictions.*`, or with --output-per-file one per input file, named after
 * it (`predictions/part-00001.csv.gz` for `part-00001.csv.gz`). Two inputs of one name in other
 * folders would write one output: that is refused before anything is scored.
 */
export function outputGroups(run: Pick<PreparedRun, 'input' | 'request'>): OutputGroup[] {
  const { input } = run;
  if (!run.request.options.outputPerFile) return [{ stem: 'predictions', segments: input.segments.map((s) => s.index) }];
  if (input.syntax === 'postgresql') throw new UsageError(`--output-per-file: ${input.location} is a database, not files; leave it out`);
  const seen = new Map<string, string>();
  return input.files.map((file, i) => {
    const stem = `predictions/${basename(file.location).replace(INPUT_EXTENSIONS, '')}`;
    const other = seen.get(stem);
    if (other !== undefined) {
      throw new UsageError(`--output-per-file: ${other} and ${formatLocation(file.location)} would both write ${stem}; score them in separate runs`);
    }
    seen.set(stem, formatLocation(file.location));
    return { stem, segments: input.segments.filter((s) => s.file === i).map((s) => s.index) };
  });
}

/**
 * Joins the segments' parts into the run's outputs (none for a run writing into a table) and `errors.jsonl`, streaming, and hashes what
 * it writes. Outputs are cut into files of --max-rows-per-file rows (`predictions-00000.csv`,
 * ...) by counting rows, never by where segments ended, so they are the same bytes however the
 * run was scored. The manifest and `_SUCCESS` are the caller's, written after this.
 */
export async function assembleOutputs(
  storage: Storage,
  run: PreparedRun,
  finished: { counts: SegmentCounts; done: SegmentDone[] },
  signal?: AbortSignal,
): Promise<OutputFile[]> {
  const { folder } = run;
  const { counts, done } = finished;
  const outputs: OutputFile[] = [];
  // A run writing into a table has no predictions files: its rows go from the parts to the table (see table-load.ts).
  const groups = run.output.tableColumns ? [] : outputGroups(run);
  for (const group of groups) outputs.push(...(await assembleGroup(storage, run, group, done, signal)));
  const errorsBytes = done.reduce((n, d) => n + d.bytes.errors, 0);
  outputs.push(
    await concatenateParts(
      storage,
      runFiles.errors(folder),
      run.input.segments.flatMap((s) => piecesOf(done[s.index], (piece) => runFiles.segmentErrors(folder, s.index, piece))),
      { rows: counts.rowsQuarantined, sizeHint: errorsBytes, signal },
    ),
  );
  return outputs;
}

/** One output's files from its segments' parts. */
async function assembleGroup(storage: Storage, run: PreparedRun, group: OutputGroup, done: SegmentDone[], signal?: AbortSignal): Promise<OutputFile[]> {
  const { folder, output } = run;
  const format = run.outputFormat;
  const extension = `${format}${output.compress === 'gzip' ? '.gz' : ''}`;
  const parts = group.segments.flatMap((i) => piecesOf(done[i], (piece) => runFiles.segmentPart(folder, i, format, piece)));
  const rows = group.segments.reduce((n, i) => n + done[i].rowsScored, 0);
  const { maxRowsPerFile: maxRows, outputEncoding: encoding } = run.request.options;
  if (format !== 'parquet' && maxRows === undefined) {
    const header = createRowWriter(format, { ...output, predictionColumns: run.schema.columns, passThroughText: false }).header();
    // The common case, kept a plain copy of the parts: its size is known, so S3 uses the smallest parts that fit.
    const sizeHint = Buffer.byteLength(header) + group.segments.reduce((n, i) => n + done[i].bytes.rows, 0);
    const name = `${group.stem}.${extension}`;
    return [
      await concatenateParts(storage, runFiles.output(folder, name), parts, {
        head: header,
        rows,
        sizeHint,
        gzip: output.compress === 'gzip',
        encoding,
        name,
        signal,
      }),
    ];
  }
  return writeShards(storage, run, group.stem, partRecords(storage, parts, format, signal), signal);
}

/** The records (rows without their line ending) of a run's parts, in order, a chunk at a time. */
async function* partRecords(storage: Storage, parts: Location[], format: OutputFormat, signal?: AbortSignal): AsyncGenerator<Buffer[]> {
  for (const part of parts) yield* records(await readPart(storage, part, signal), format === 'csv' ? 'csv' : 'jsonl');
}

/**
 * The records of text in a row writer's syntax (rows without their line ending, as bytes), a
 * chunk at a time: CSV rows are cut at line feeds outside quotes, since a quoted value may hold one.
 */
export async function* records(bytes: AsyncIterable<Buffer>, syntax: 'csv' | 'jsonl'): AsyncGenerator<Buffer[]> {
  for await (const rows of splitRawRows(bytes, new RowSplitter(syntax))) yield rows.map((row) => row.bytes);
}

/**
 * Writes one output's records (in the run's output format: text lines, or `values` lines for
 * Parquet) into its files: `<stem>.<ext>`, or with --max-rows-per-file files of that many rows,
 * `<stem>-00000.<ext>`, ..., cut by counting rows; each CSV file with its header. An output
 * without rows is still a file: a header, or a Parquet file of no rows.
 */
export async function writeShards(
  storage: Storage,
  run: PreparedRun,
  stem: string,
  rows: AsyncIterable<Buffer[]>,
  signal?: AbortSignal,
): Promise<OutputFile[]> {
  const { folder, output } = run;
  const format = run.outputFormat;
  const extension = `${format}${output.compress === 'gzip' ? '.gz' : ''}`;
  const { maxRowsPerFile: maxRows, outputEncoding: encoding } = run.request.options;
  const header = format === 'parquet' ? '' : createRowWriter(format, { ...output, predictionColumns: run.schema.columns, passThroughText: false }).header();
  const shardName = (n: number) => (maxRows === undefined ? `${stem}.${extension}` : `${stem}-${String(n).padStart(5, '0')}.${extension}`);
  const files: OutputFile[] = [];
  let shard: { file: OutputFileWriter; rows: number; parquet?: ParquetOutput } | undefined;
  const start = async () => {
    // Loaded for Parquet outputs only: hyparquet-writer (and hyparquet) would be live heap in every other run.
    const parquetOutput = format === 'parquet' ? await loadParquetOutput() : undefined;
    const name = shardName(files.length);
    const file = new OutputFileWriter(storage, runFiles.output(folder, name), name, { gzip: output.compress === 'gzip', encoding, signal });
    const parquet = parquetOutput?.createParquetOutput(file.stream, parquetColumns(run), { createdBy: `${TOOL.name} ${TOOL.version}` });
    shard = { file, rows: 0, parquet };
    await file.write(header);
    return shard;
  };
  const close = async () => {
    if (!shard) return;
    const { file, parquet } = shard;
    if (parquet) await parquet.end();
    files.push(await file.finish(shard.rows));
    shard = undefined;
  };
  try {
    let batch: unknown[][] = [];
    const flush = async () => {
      if (shard?.parquet && batch.length > 0) await shard.parquet.writeRows(batch);
      batch = [];
    };
    for await (const lines of rows) {
      for (const line of lines) {
        if (!shard || (maxRows !== undefined && shard.rows >= maxRows)) {
          await flush();
          await close();
          await start();
        }
        const current = shard!;
        current.rows++;
        if (current.parquet) {
          batch.push(JSON.parse(line.toString('utf8')) as unknown[]);
          if (batch.length >= PARQUET_WRITE_ROWS) await flush();
        } else await current.file.write(Buffer.concat([line, NEWLINE]));
      }
    }
    await flush();
    if (files.length === 0 && !shard) await start();
    await close();
  } catch (err) {
    await shard?.file.abandon(err as Error);
    throw err;
  }
  return files;
}

const NEWLINE = Buffer.from('\n');

/** Rows handed to the Parquet writer at once; it buffers a row group of its own. */
const PARQUET_WRITE_ROWS = 1000;

/** The Parquet output's columns, as fixed when the run was prepared. */
function parquetColumns(run: PreparedRun): ParquetOutputColumn[] {
  const columns = run.output.parquetColumns;
  if (!columns) throw new RunFolderError(`run ${run.runId} has no Parquet columns in its run.json; start the run anew`);
  return columns;
}

/** A segment's part, whose absence (with its done marker there) is a damaged run folder. */
export function readPart(storage: Storage, part: Location, signal?: AbortSignal): Promise<Readable> {
  return storage.read(part, { signal }).catch((err: unknown) => {
    throw err instanceof NotFoundError
      ? new RunFolderError(
          `${formatLocation(part)} is missing, though its segment's done marker is there: was it deleted? Delete that done marker (and the segment's .prefix.json, if there is one) to score the segment again, then resume the run`,
          err,
        )
      : err;
  });
}

/**
 * Writes `head` and then the parts, in order, into one file (gzipped when asked), hashing what it
 * stores. `onChunk` sees each part's bytes as they are copied, with the part's place in `parts`.
 */
export async function concatenateParts(
  storage: Storage,
  target: Location,
  parts: Location[],
  options: {
    head?: string;
    rows?: number;
    sizeHint?: number;
    gzip?: boolean;
    encoding?: string;
    name?: string;
    signal?: AbortSignal;
    onChunk?: (part: number, chunk: Buffer) => void;
  } = {},
): Promise<OutputFile> {
  const { head = '', rows = 0, sizeHint, gzip = false, encoding, name = basename(target), signal, onChunk } = options;
  const file = new OutputFileWriter(storage, target, name, { gzip, encoding, sizeHint, signal });
  try {
    await file.write(head);
    for (const [k, part] of parts.entries()) {
      for await (const chunk of await readPart(storage, part, signal)) {
        onChunk?.(k, chunk as Buffer);
        await file.write(chunk as Buffer);
      }
    }
  } catch (err) {
    await file.abandon(err as Error);
    throw err;
  }
  return file.finish(rows);
}
