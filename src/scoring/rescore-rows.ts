import type { Limits, RunOptions } from '../config/index.js';
import { UsageError } from '../errors.js';
import { csvRowText, dialectForName, type InputRow, memberText, parseRows, type RawRow, RowSplitter, splitRawRows } from '../formats/index.js';
import { formatLocation, type Location, type ObjectInfo, parseLocation, type Storage } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { rowBounds, rowOverProblem } from './input-bounds.js';
import { correctedDatabaseRow } from './database-row-check.js';
import { inputBytes } from './input-bytes.js';
import { inputDigest, type PatchedRun } from './patched-run.js';
import type { SegmentPlan } from './plan.js';

/**
 * The rows a rescore sends again, as a plan: the file their lines are read from (the patched run's
 * errors.jsonl, or the corrected copy `--rows` names), the rows (ascending) with the lines they
 * started on in the input, and one segment per input file that has some, whose `start` and `end`
 * are the byte range of its lines in that file and whose `firstRow` is the place of its first row
 * in `rows`. Lines of rows not sent lie in those ranges too, and are read past.
 */
export interface RowsToSend {
  location: Location;
  info: ObjectInfo;
  /** How messages name the file: `--rows <file>`, or the run's errors.jsonl. */
  name: string;
  rows: number[];
  lines: number[];
  segments: SegmentPlan[];
  /** Lines the file holds, rows sent or not. */
  read: number;
}

/** How a rescore reads a line of rows: the patched run, its options (the CSV dialect) and the deployment's bounds. */
export interface RowReading {
  patched: PatchedRun;
  options: Pick<RunOptions, 'delimiter' | 'quote'>;
  limits: Limits;
}

/** Bytes a line of a rows file may take past twice MAX_ROW_BYTES (the row, escaped as JSON): its row number, status, title and detail. */
const LINE_OVERHEAD_BYTES = 64 * 1024;

/**
 * Reads the rows file through once and plans what a rescore sends (see RowsToSend), before
 * anything is sent. Every line must name a row the run quarantined, in input order, each once,
 * with its input: the row's values by column (as errors.jsonl writes them) or its text; anything
 * else is a usage error naming the file and line. A row quarantined as malformed is sent only where
 * its input was changed (it was never sent, and as it was it cannot be read): without `--rows`,
 * every row the model refused is sent as it was, and the malformed ones stay as they were.
 */
export async function planRowsToSend(storage: Storage, location: Location, name: string, reading: RowReading, signal?: AbortSignal): Promise<RowsToSend> {
  const info = await storage.stat(location, signal).catch((err: unknown) => {
    throw new UsageError(`${name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  });
  const plan: RowsToSend = { location, info, name, rows: [], lines: [], segments: [], read: 0 };
  const { quarantined } = reading.patched;
  // Where the next line's row is looked for among the quarantined rows, which are in input order too.
  let k = 0;
  const take = (raw: RawRow) => {
    plan.read++;
    const line = readLine(raw, name);
    const row = line.row;
    const before = plan.rows.at(-1);
    if (before !== undefined && row <= before) {
      throw new UsageError(`${name}: line ${raw.line} names row ${row} after row ${before}: keep errors.jsonl's lines in its order, each row once`);
    }
    while (k < quarantined.rows.length && quarantined.rows[k] < row) k++;
    if (quarantined.rows[k] !== row) {
      throw new UsageError(
        `${name}: line ${raw.line} names row ${row}, which run ${reading.patched.runId} did not quarantine; keep only lines of its errors.jsonl`,
      );
    }
    if (!sendsRow(line, quarantined.malformed.get(row))) return;
    const file = quarantined.files[k];
    // Checked now, so that a row that cannot be read is refused before anything is sent.
    rowToSend(line, { index: row - 1, line: quarantined.lines[k], file, key: quarantined.keys?.[k] }, reading, name);
    plan.rows.push(row);
    plan.lines.push(quarantined.lines[k]);
    const last = plan.segments.at(-1);
    const end = raw.offset + raw.bytes.length;
    if (last?.file === file) {
      last.rows++;
      last.end = end;
    } else {
      plan.segments.push({ index: plan.segments.length, file, firstRow: plan.rows.length - 1, rows: 1, start: raw.offset, end, firstLine: raw.line });
    }
  };
  const bytes = inputBytes(storage, { location, info, gzip: false }, { start: 0, end: info.size }, signal);
  for await (const lines of splitRawRows(bytes, new RowSplitter('jsonl', 0, 1, undefined, lineBounds(reading.limits)))) for (const raw of lines) take(raw);
  return plan;
}

/**
 * Segment `index`'s rows of a plan, read again from its file (which must not have changed since it
 * was planned: E_INPUT_CHANGED), each at its place in the input: what a rescore's segments score
 * (see SegmentWork.rows).
 */
export function rowsSource(storage: Storage, plan: RowsToSend, reading: RowReading): (index: number, signal: AbortSignal) => AsyncIterable<InputRow[]> {
  return async function* (index, signal) {
    const segment = plan.segments[index];
    let next = segment.firstRow;
    const end = segment.firstRow + segment.rows;
    const splitter = new RowSplitter('jsonl', segment.start, segment.firstLine, undefined, lineBounds(reading.limits));
    const bytes = inputBytes(storage, { location: plan.location, info: plan.info, gzip: false }, segment, signal);
    for await (const lines of splitRawRows(bytes, splitter)) {
      const rows: InputRow[] = [];
      for (const raw of lines) {
        const line = readLine(raw, plan.name);
        if (next >= end || line.row !== plan.rows[next]) continue;
        // A database row's key was held to its value as the plan read the file, which has not changed since.
        rows.push(rowToSend(line, { index: line.row - 1, line: plan.lines[next], file: segment.file, key: undefined }, reading, plan.name));
        next++;
      }
      if (rows.length > 0) yield rows;
    }
  };
}

/** A line of a rows file: the row it names, its input as parsed and as written, and where it is. */
interface RowsLine {
  row: number;
  input: unknown;
  inputText: string;
  /** Its line in the rows file, for messages. */
  at: number;
}

/** The bounds on a line of a rows file: a row's bytes twice over (escaped as JSON), and room for the rest of the line. */
function lineBounds(limits: Limits): { maxFieldBytes: number; maxRowBytes: number } {
  const maxRowBytes = 2 * limits.rowBytes + LINE_OVERHEAD_BYTES;
  return { maxFieldBytes: maxRowBytes, maxRowBytes };
}

/** A line of a rows file, read and checked: a JSON object naming its row and holding its input. */
function readLine(raw: RawRow, name: string): RowsLine {
  const at = raw.line;
  if (raw.over) {
    throw new UsageError(
      `${name}: line ${at} takes ${raw.over.rowBytes} bytes, more than a line may (${raw.over.limit}: twice MAX_ROW_BYTES, and 64 KiB for the rest of the line)`,
    );
  }
  const text = raw.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${name}: line ${at} is not JSON (${err instanceof Error ? err.message : String(err)}): keep each line as errors.jsonl wrote it`);
  }
  const line = parsed as { row?: unknown; input?: unknown };
  if (typeof parsed !== 'object' || parsed === null || !Number.isInteger(line.row) || (line.row as number) < 1) {
    throw new UsageError(`${name}: line ${at} names no row (a "row" number, as each line of errors.jsonl has)`);
  }
  const inputText = memberText(text, 'input');
  if (inputText === undefined) throw new UsageError(`${name}: line ${at} (row ${line.row as number}) has no "input": keep each line's row under "input"`);
  return { row: line.row as number, input: line.input, inputText, at };
}

/** Whether a line's row is sent: a row quarantined as malformed only where its input was changed (`malformed`: the digest of what it was). */
function sendsRow(line: RowsLine, malformed: string | undefined): boolean {
  return malformed === undefined || inputDigest(JSON.stringify(line.input)) !== malformed;
}

/** Where a row sent stands: its index in the run, its line in its input file (a database's: its number), its file, and a database row's key as it was. */
interface SendPlace {
  index: number;
  line: number;
  file: number;
  /** A database row's key value as errors.jsonl wrote it (see QuarantinedRows.keys); undefined: not held to one. */
  key: string | undefined;
}

/**
 * The row a line sends, as a segment reads one from its input: its text split and parsed in the
 * input's syntax, dialect and bounds, so that a row that cannot be read is quarantined as it would
 * have been. A CSV row given by its values (errors.jsonl's record) is the text the writer would
 * write of them; Parquet rows are their values as given; a database's, its values held to the
 * run's columns and types (see correctedDatabaseRow).
 */
function rowToSend(line: RowsLine, place: SendPlace, reading: RowReading, name: string): InputRow {
  const { layout, manifest } = reading.patched;
  const where = `${name}: line ${line.at} (row ${line.row})`;
  const { input } = line;
  if (layout.syntax === 'postgresql') {
    const shape = { columns: layout.columns, types: layout.types ?? {}, key: manifest.database?.key ?? '' };
    return correctedDatabaseRow(input, { index: place.index, line: place.line, where, key: place.key }, shape);
  }
  const isObject = typeof input === 'object' && input !== null && !Array.isArray(input);
  if (!isObject && typeof input !== 'string') throw new UsageError(`${where}: "input" must be the row: its values by column, or its text`);
  if (layout.syntax === 'parquet') {
    if (!isObject) throw new UsageError(`${where}: "input" must be the row's values by column, as errors.jsonl wrote it`);
    return { index: place.index, line: place.line, record: input as Record<string, unknown> };
  }
  const fileName = manifest.inputs[place.file]?.location ?? manifest.input.location;
  const columns = layout.fileColumns?.[place.file] ?? layout.columns;
  const dialect = dialectForName(fileName, reading.options);
  let text: string;
  if (typeof input === 'string') text = input;
  else if (layout.syntax === 'jsonl') text = line.inputText;
  else text = csvRowText(csvFields(input as Record<string, unknown>, columns, where), dialect);
  const raws: RawRow[] = [];
  const splitter = new RowSplitter(layout.syntax, 0, place.line, dialect, rowBounds(reading.limits));
  splitter.push(Buffer.from(text, 'utf8'), (raw) => raws.push(raw));
  splitter.end((raw) => raws.push(raw));
  if (raws.length !== 1) throw new UsageError(`${where}: "input" holds ${raws.length} rows of ${formatLocation(parseLocation(fileName))}; give one`);
  return parseRows(raws, place.index, columns, layout.syntax, dialect, false, rowOverProblem)[0];
}

/** A CSV row's fields, in its file's column order, from its values by column: each a text as the file held it. */
function csvFields(values: Record<string, unknown>, columns: readonly string[], where: string): string[] {
  const unknown = Object.keys(values).filter((c) => !columns.includes(c));
  const missing = columns.filter((c) => !Object.hasOwn(values, c));
  if (unknown.length > 0 || missing.length > 0) {
    const what = [unknown.length > 0 && `no column(s) ${excerpt(unknown.join(', '))}`, missing.length > 0 && `no value for ${excerpt(missing.join(', '))}`];
    throw new UsageError(`${where}: the input file has ${what.filter(Boolean).join(', and ')}: change the values, not the columns`);
  }
  return columns.map((c) => {
    const value = values[c];
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    if (value === null) return '';
    throw new UsageError(`${where}: column ${excerpt(c)} holds ${Array.isArray(value) ? 'an array' : 'an object'}; a CSV value is text`);
  });
}
