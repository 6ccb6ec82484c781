import { DEFAULT_LIMITS, type Limits } from '../config/index.js';
import { NotFoundError, RunFolderError } from '../errors.js';
import {
  decodeToUtf8,
  detectSyntax,
  isGzip,
  isParquet,
  isUtf8,
  parseCsvHeader,
  parseRows,
  type RawRow,
  readParquetLayout,
  readParquetRows,
  RowSplitter,
} from '../formats/index.js';
import { formatLocation, joinLocation, type Location, type Storage } from '../storage/index.js';
import { inflationCap, parquetBounds } from './input-bounds.js';
import { gunzip, rangeRead } from './input-bytes.js';
import { missingRunFile } from './run-file.js';
import type { OutputFile } from './manifest.js';

/**
 * A finished run's output rows, in the order of its outputs (the input's order), a chunk at a
 * time: each file is streamed (CSV and JSON Lines inflated and decoded as they come, Parquet a
 * row group at a time), never held whole. Rows are objects keyed by column: CSV values are the
 * text written ('' for a missing value), JSON Lines and Parquet values as typed. A file missing,
 * with a malformed row, or with other rows than the manifest says is E_RUN_STATE. Gzipped files
 * are inflated, and Parquet footers read, within `limits`, as inputs are.
 */
export async function* readOutputRows(
  storage: Storage,
  folder: Location,
  outputs: readonly OutputFile[],
  encoding: string,
  signal?: AbortSignal,
  limits: Limits = DEFAULT_LIMITS,
): AsyncGenerator<Record<string, unknown>[]> {
  for (const output of outputs) {
    // Names come from the manifest: only files of the run folder itself are read.
    if (output.file.split('/').some((part) => part === '..' || part === '')) {
      throw new RunFolderError(`the manifest of ${formatLocation(folder)} lists an output "${output.file}" outside its folder: was it edited?`);
    }
    const location = joinLocation(folder, output.file);
    const rows = readFile(storage, location, output.file, encoding, limits, signal);
    let count = 0;
    for await (const chunk of rows) {
      count += chunk.length;
      yield chunk;
    }
    if (count !== output.rows) {
      throw new RunFolderError(`${formatLocation(location)} has ${count} rows where its manifest says ${output.rows}: was it changed after the run?`);
    }
  }
}

async function* readFile(
  storage: Storage,
  location: Location,
  name: string,
  encoding: string,
  limits: Limits,
  signal?: AbortSignal,
): AsyncGenerator<Record<string, unknown>[]> {
  const where = formatLocation(location);
  const info = await storage.stat(location, signal).catch((err: unknown) => {
    throw err instanceof NotFoundError ? missingRunFile(location) : err;
  });
  if (isParquet(name, Buffer.alloc(0))) {
    const read = rangeRead(storage, location, info, signal);
    const layout = await readParquetLayout(read, info.size, where, parquetBounds(limits));
    yield* readParquetRows(read, info.size, where, { first: 0, count: layout.rowGroups.length });
    return;
  }
  const syntax = detectSyntax(name, Buffer.alloc(0));
  const raw = await storage.read(location, { expect: info, signal });
  try {
    const inflated = isGzip(name, Buffer.alloc(0)) ? gunzip(raw, where, inflationCap(limits, info.size, where)) : (raw as AsyncIterable<Buffer>);
    const bytes = isUtf8(encoding) ? inflated : decodeToUtf8(inflated, encoding);
    yield* splitRows(bytes, syntax, where);
  } finally {
    raw.destroy();
  }
}

/** Rows of CSV (the writer's own dialect, its first row the header) or JSON Lines text. */
async function* splitRows(bytes: AsyncIterable<Buffer>, syntax: 'csv' | 'jsonl', where: string): AsyncGenerator<Record<string, unknown>[]> {
  const splitter = new RowSplitter(syntax);
  let header: string[] | undefined = syntax === 'jsonl' ? [] : undefined;
  let raws: RawRow[] = [];
  let index = 0;
  const collect = (row: RawRow) => {
    if (header === undefined) header = parseCsvHeader(row, where);
    else raws.push(row);
  };
  const parsed = () => {
    const rows = parseRows(raws, index, header!, syntax);
    index += raws.length;
    raws = [];
    return rows.map((row) => {
      if (row.record === undefined) throw new RunFolderError(`${where}: line ${row.line} cannot be read (${row.problem}): was it changed after the run?`);
      return row.record;
    });
  };
  for await (const chunk of bytes) {
    splitter.push(chunk, collect);
    if (raws.length > 0) yield parsed();
  }
  splitter.end(collect);
  if (raws.length > 0) yield parsed();
}
