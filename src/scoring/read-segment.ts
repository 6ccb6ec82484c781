import { InputError } from '../errors.js';
import { dialectForName, type InputRow, isUtf8, parseRows, type RawRow, readParquetRows, RowSplitter } from '../formats/index.js';
import { formatLocation, type Storage } from '../storage/index.js';
import { rowOverProblem } from './input-bounds.js';
import { inputBytes, rangeRead } from './input-bytes.js';
import { readDatabaseSegment, type SegmentRead } from './database-segment.js';
import type { FilesInputPlan, InputPlan } from './plan.js';

/** The CSV dialect and encoding asked for; a `.tsv` file without a delimiter asked is read with tabs. */
export interface DialectOptions {
  delimiter?: string;
  quote: string;
  encoding: string;
}

/**
 * A segment's rows, a chunk at a time: of a database, its key range (see readDatabaseSegment,
 * whose checksum `onRead` hears once every row is read); of files, read from its file alone (see
 * readFileSegment). Row indexes count from the segment's first row in the run.
 */
export async function* readSegment(
  storage: Storage,
  input: InputPlan,
  index: number,
  dialect: DialectOptions,
  signal?: AbortSignal,
  unquotedAsText = false,
  onRead?: (read: SegmentRead) => void,
): AsyncGenerator<InputRow[]> {
  if (input.syntax === 'postgresql') yield* readDatabaseSegment(input, index, signal, onRead);
  else yield* readFileSegment(storage, input, index, dialect, signal, unquotedAsText);
}

/**
 * A segment's rows, a chunk at a time, read from its file alone: CSV and JSON Lines by byte range
 * (of the staged UTF-8 copy, for a file in another encoding), Parquet by row groups. With
 * `unquotedAsText`, CSV rows in plain RFC 4180 (with quotes or without) come as their text alone
 * (see parseRows). Rows are read within the plan's bounds (`rowBounds`): a row past one comes
 * with its problem, naming the setting.
 */
async function* readFileSegment(
  storage: Storage,
  input: FilesInputPlan,
  index: number,
  dialect: DialectOptions,
  signal?: AbortSignal,
  unquotedAsText = false,
): AsyncGenerator<InputRow[]> {
  const segment = input.segments[index];
  const file = input.files[segment.file];
  const source = file.staged ?? file;
  let next = segment.firstRow;
  if (file.syntax === 'parquet') {
    let line = segment.firstLine;
    const groups = { first: segment.start, count: segment.end - segment.start };
    let left = segment.rows;
    for await (const records of readParquetRows(
      rangeRead(storage, source.location, file.info, signal),
      file.info.size,
      formatLocation(file.location),
      groups,
    )) {
      // --limit may end a segment inside its last row group.
      const taken = records.length > left ? records.slice(0, left) : records;
      left -= taken.length;
      yield taken.map((record) => ({ index: next++, line: line++, record }));
      if (left === 0) break;
    }
    return;
  }
  const csvDialect = dialectForName(formatLocation(file.location), dialect);
  const splitter = new RowSplitter(file.syntax, segment.start, segment.firstLine, csvDialect, input.rowBounds);
  let rows: RawRow[] = [];
  const collect = (r: RawRow) => rows.push(r);
  const gzip = file.staged ? false : file.gzip;
  // Without its staged UTF-8 copy (a dry run), a file in another encoding is decoded from its start.
  const encoding = file.staged || isUtf8(dialect.encoding) ? undefined : dialect.encoding;
  const parsed = () => {
    const out = parseRows(rows, next, file.columns, file.syntax as 'csv' | 'jsonl', csvDialect, unquotedAsText, rowOverProblem);
    next += rows.length;
    rows = [];
    return out;
  };
  for await (const chunk of inputBytes(storage, { location: source.location, info: source.info, gzip, ...(encoding && { encoding }) }, segment, signal)) {
    splitter.push(chunk, collect);
    if (rows.length > 0) yield parsed();
  }
  if (splitter.end(collect).unterminatedQuoteLine !== undefined) {
    throw new InputError(`${formatLocation(file.location)}: segment ${index} ends inside a quoted field; the input changed during the run`, 'E_INPUT_CHANGED');
  }
  if (rows.length > 0) yield parsed();
}
