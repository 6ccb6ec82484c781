import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { DEFAULT_LIMITS, type Limits } from '../config/index.js';
import { InputError } from '../errors.js';
import {
  type CsvDialect,
  decodeToUtf8,
  describeBinary,
  detectSyntax,
  dialectForName,
  isGzip,
  isParquet,
  isUtf8,
  jsonKeys,
  PARQUET_VALUE_TYPES,
  type ParquetValueType,
  parseCsvHeader,
  type RawRow,
  readParquetLayout,
  type RowBounds,
  RowSplitter,
  Utf8Check,
} from '../formats/index.js';
import { formatLocation, type ListedFile, listInputFiles, type Location, type ObjectInfo, type Storage, storedLocationSchema } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { inflationCap, parquetBounds, rowOverError } from './input-bounds.js';
import { tooManySegments } from './segment-bound.js';
import { gunzip, inputMissing, rangeRead } from './input-bytes.js';
import { expectedSize, StagedCopy } from './staged-copy.js';
import { databaseInputPlanSchema, type DatabaseInputPlan } from './database-plan.js';

/**
 * A slice of the input that one worker scores on its own: whole rows of one file, as a byte range
 * (CSV, JSON Lines) or a range of row groups (Parquet).
 */
const segmentPlanSchema = z.object({
  index: z.int().min(0),
  /** The file the segment is in: its index in the plan's `files` (schema version 1 runs had one file). */
  file: z.int().min(0).default(0),
  /** 0-based index, in the whole run, of the segment's first data row. */
  firstRow: z.int().min(0),
  rows: z.int().min(0),
  /** `[start, end)`: bytes of the (decompressed, UTF-8) file, or Parquet row groups. */
  start: z.int().min(0),
  end: z.int().min(0),
  /** Physical line of the segment's first row (Parquet: its row number in the file), for messages. */
  firstLine: z.int().min(1),
});
export type SegmentPlan = z.output<typeof segmentPlanSchema>;

/** The syntaxes an input file may have. */
export const INPUT_SYNTAXES = ['csv', 'jsonl', 'parquet'] as const;
export type InputSyntax = (typeof INPUT_SYNTAXES)[number];

const objectInfoSchema = z.object({ size: z.int().min(0), etag: z.string().optional(), mtimeMs: z.number().optional() }) satisfies z.ZodType<ObjectInfo>;

/** One file of a run's input: its identity, shape and rows. */
const inputFileSchema = z.object({
  /** Where the file is: text in run.json, a parsed location once read. */
  location: storedLocationSchema,
  info: objectInfoSchema,
  /** sha256 of the stored bytes; null with --limit, which stops reading early. */
  sha256: z.string().nullable(),
  syntax: z.enum(INPUT_SYNTAXES),
  gzip: z.boolean(),
  /** The file's own columns: its CSV header, its JSON keys, its Parquet schema. */
  columns: z.array(z.string()),
  /** Data rows to score in this file. */
  rows: z.int().min(0),
  /**
   * A UTF-8, uncompressed copy of a gzipped file or of a file in another encoding, written into the
   * run's `_work` as it was planned: gzip cannot be read from the middle, and byte ranges of another
   * encoding would cut characters, so segments read the copy. Runs planned by 0.3.0 and before
   * staged only other encodings; their gzipped segments inflate the file from its start.
   */
  staged: z.object({ location: storedLocationSchema, info: objectInfoSchema }).optional(),
});
export type InputFilePlan = z.output<typeof inputFileSchema>;

/** What one pass over the input's files found: their identities, shapes and the segments to score. */
const filesInputPlanSchema = z.object({
  /** The input as the user named it: a file, a folder or prefix, or a glob. */
  location: z.string(),
  files: z.array(inputFileSchema).min(1),
  syntax: z.enum(INPUT_SYNTAXES),
  /** The run's columns: the first file's (every file has the same ones), or every key any JSON Lines row has. */
  columns: z.array(z.string()),
  /** Parquet inputs: each column's type, so values keep their types into a Parquet output. */
  types: z.record(z.string(), z.enum(PARQUET_VALUE_TYPES)).optional(),
  /** Data rows to score (all of them, or the first --limit). */
  rows: z.int().min(0),
  segments: z.array(segmentPlanSchema),
  /**
   * Set in a plan stored while planning went on (see PlanOptions.onSegment): its segments so far,
   * the rest unknown, so a resume plans the input again and checks it finds the same segments.
   */
  planning: z.literal(true).optional(),
  /**
   * The bounds on one field's and one row's bytes (MAX_FIELD_BYTES, MAX_ROW_BYTES) the input was
   * planned with: every segment is read with them, whatever the settings of the process reading
   * it, so a row is quarantined for its size alike on every worker and after a resume. (Bounds
   * never move a row's end, so the segments are the same with any.) Absent in runs planned by
   * 0.3.0 and before, which are read without bounds, as they were planned.
   */
  rowBounds: z.object({ maxFieldBytes: z.int().min(1), maxRowBytes: z.int().min(1) }).optional(),
});

/**
 * The plan as stored in `_work/run.json`: of files, or of a database (see DatabaseInputPlan). A
 * run of schema version 1 (batch-scorer 0.1.0 and 0.2.0) had one file, described at the top
 * level; it is read as a plan of that one file.
 */
export const inputPlanSchema = z.preprocess(
  (stored) => {
    if (typeof stored !== 'object' || stored === null || 'files' in stored || (stored as { syntax?: unknown }).syntax === 'postgresql') return stored;
    const one = stored as Record<string, unknown>;
    return { ...one, files: [{ ...one, location: one.location }] };
  },
  z.discriminatedUnion('syntax', [filesInputPlanSchema, databaseInputPlanSchema]),
);
/** The plan of an input of files. */
export type FilesInputPlan = z.output<typeof filesInputPlanSchema>;
/** A run's input plan: of files, or of a database (`syntax: 'postgresql'`), which has no `files`. */
export type InputPlan = FilesInputPlan | DatabaseInputPlan;
/** A segment of either kind of plan. */
export type AnySegmentPlan = InputPlan['segments'][number];

/** The file segment `index` of the plan reads; undefined for a database input, which has none. */
export function segmentFile(input: InputPlan, index: number): InputFilePlan | undefined {
  return input.syntax === 'postgresql' ? undefined : input.files[input.segments[index].file];
}

/** Whether the plan is a plan so far, planning going on (see PlanOptions.onSegment): only an input of files is planned so. */
export function planningGoesOn(input: InputPlan): input is FilesInputPlan & { planning: true } {
  return input.syntax !== 'postgresql' && input.planning === true;
}

/** The plan as `_work/run.json` stores it: its files' locations as text, which inputPlanSchema parses again. */
export function storedInputPlan(plan: InputPlan): z.input<typeof inputPlanSchema> {
  if (plan.syntax === 'postgresql') return plan;
  return {
    ...plan,
    files: plan.files.map(({ staged, ...file }) => ({
      ...file,
      location: formatLocation(file.location),
      ...(staged && { staged: { ...staged, location: formatLocation(staged.location) } }),
    })),
  };
}

/** Distinct keys a JSON Lines file may have: columns, not data (a key per row would be a bug upstream). */
export const MAX_JSONL_KEYS = 10_000;

export interface PlanOptions {
  segmentRows: number;
  limit?: number;
  /** CSV dialect as asked (a `.tsv` file defaults to tabs). */
  delimiter?: string;
  quote: string;
  encoding: string;
  /** Where to write UTF-8 copies of files in other encodings; without it (a dry run) nothing is written. */
  stage?: (file: number) => Location;
  signal?: AbortSignal;
  /**
   * The deployment's bounds on gzip inflation, staging space, Parquet footers and segments (past
   * MAX_SEGMENTS planning stops at the first segment too many, E_LIMIT); DEFAULT_LIMITS when absent.
   */
  limits?: Limits;
  /** The bounds on a field's and a row's bytes, kept in the plan (see `rowBounds` there); none: rows of any length. */
  rowBounds?: RowBounds;
  /**
   * Hears the plan so far each time planning finds a segment's end, before planning ends, so the
   * segments found can be scored meanwhile: the same object each time, grown (its segments and
   * rows; `planning` set, no sha256), to be read and never changed. Only for an input of one CSV
   * file, in UTF-8 and uncompressed, whose ranges can be read at once: JSON Lines has every key of
   * every row as its columns, gzip and other encodings are read from a copy stored whole only at
   * the end, Parquet's row groups are known from its footer after its bytes are hashed, and
   * several files must each be checked against the first; such inputs are planned whole first.
   * The last segment's end is found with the plan's end, and is not heard here.
   */
  onSegment?: (sofar: FilesInputPlan) => void;
  /**
   * Awaited once onSegment has heard of a first segment, before planning reads on: the run starts
   * (its probe, its run.json) without planning's work in its way, so its first request waits for
   * no more of the input whatever its size. Planning stops with its rejection.
   */
  holdAfterFirst?: Promise<unknown>;
  /**
   * Hears the bytes planning reads, as it reads them: a text file's once inflated and decoded, a
   * Parquet file's as stored. What it throws stops planning (a dry run's bounds, see WorkBounds).
   */
  onBytes?: (bytes: number) => void;
}

/**
 * Plans an input of one or many files: lists them, reads each once (its sha256, its encoding, its
 * header or keys or schema) and cuts its rows into segments of about `segmentRows`, in file then
 * row order, the order of the output. Every file must share the first one's syntax and columns, so
 * the output has one shape. Nothing is kept but offsets, so memory does not grow with the input.
 */
export async function planInput(storage: Storage, location: Location, options: PlanOptions): Promise<FilesInputPlan> {
  const name = formatLocation(location);
  const listed = await listInputFiles(storage, location, options.signal).catch(inputMissing);
  const files: InputFilePlan[] = [];
  const segments: SegmentPlan[] = [];
  let rows = 0;
  let columns: string[] | undefined;
  let types: Record<string, ParquetValueType> | undefined;
  const seen = new Set<string>();
  const onSegment = listed.length === 1 ? options.onSegment : undefined;
  for (const [i, file] of listed.entries()) {
    if (options.limit !== undefined && rows >= options.limit) break;
    const limit = options.limit === undefined ? undefined : options.limit - rows;
    const planned = await planFile(storage, file, i, { ...options, limit, onSegment }, rows, segments, name);
    const first = files[0];
    if (first && planned.plan.syntax !== first.syntax) {
      throw new InputError(
        `${formatLocation(planned.plan.location)} is ${planned.plan.syntax} where ${formatLocation(first.location)} is ${first.syntax}: the files of one run must share a format`,
      );
    }
    if (planned.plan.syntax === 'jsonl') {
      columns ??= [];
      for (const key of planned.plan.columns) if (!seen.has(key)) columns.push((seen.add(key), key));
    } else if (!columns || !first) {
      columns = planned.plan.columns;
      types = planned.types;
    } else {
      sameColumns(first, planned.plan, types, planned.types);
    }
    files.push(planned.plan);
    rows += planned.plan.rows;
  }
  return {
    location: name,
    files,
    syntax: files[0].syntax,
    columns: columns ?? [],
    ...(types && { types }),
    rows,
    segments,
    ...(options.rowBounds && { rowBounds: options.rowBounds }),
  };
}

/** The files of one run must have the same columns (in any order) and, in Parquet, the same types. */
function sameColumns(first: InputFilePlan, file: InputFilePlan, types?: Record<string, string>, fileTypes?: Record<string, string>): void {
  const had = new Set(first.columns);
  const has = new Set(file.columns);
  const missing = first.columns.filter((c) => !has.has(c));
  const extra = file.columns.filter((c) => !had.has(c));
  if (missing.length > 0 || extra.length > 0) {
    const what = [missing.length > 0 && `lacks ${excerpt(missing.join(', '))}`, extra.length > 0 && `has ${excerpt(extra.join(', '))} besides`]
      .filter(Boolean)
      .join(' and ');
    throw new InputError(
      `${formatLocation(file.location)} ${what} the columns of ${formatLocation(first.location)}: the files of one run must have the same columns`,
    );
  }
  const differs = first.columns.find((c) => types?.[c] !== fileTypes?.[c]);
  if (differs !== undefined) {
    throw new InputError(
      `${formatLocation(file.location)}: column ${excerpt(differs)} is ${fileTypes?.[differs]} where ${formatLocation(first.location)} has ${types?.[differs]}; the files of one run must have the same types`,
    );
  }
}

/**
 * Plans one file, appending its segments (numbered on from `segments`, rows counted on from
 * `firstRow`).
 */
async function planFile(
  storage: Storage,
  file: ListedFile,
  fileIndex: number,
  options: PlanOptions,
  firstRow: number,
  segments: SegmentPlan[],
  inputName: string,
): Promise<{ plan: InputFilePlan; types?: Record<string, ParquetValueType> }> {
  const name = formatLocation(file.location);
  const info: ObjectInfo = {
    size: file.size,
    ...(file.etag !== undefined && { etag: file.etag }),
    ...(file.mtimeMs !== undefined && { mtimeMs: file.mtimeMs }),
  };
  const limits = options.limits ?? DEFAULT_LIMITS;
  const raw = await storage.read(file.location, { expect: info, signal: options.signal }).catch(inputMissing);
  const hash = createHash('sha256');
  const hashed = (async function* () {
    for await (const chunk of raw as AsyncIterable<Buffer>) {
      hash.update(chunk);
      yield chunk;
    }
  })();
  try {
    const first = await hashed.next();
    const head: Buffer = first.done ? Buffer.alloc(0) : first.value;
    if (isParquet(name, head)) {
      // The footer says it all; the bytes are still read once, for the sha256 the manifest keeps (not with --limit).
      options.onBytes?.(head.length);
      if (options.limit === undefined) for await (const chunk of hashed) options.onBytes?.(chunk.length);
      const layout = await readParquetLayout(rangeRead(storage, file.location, info, options.signal), info.size, name, parquetBounds(limits));
      const rows = planRowGroups(name, layout.rowGroups, fileIndex, firstRow, options, segments);
      const plan: InputFilePlan = {
        location: file.location,
        info,
        sha256: options.limit === undefined ? hash.digest('hex') : null,
        syntax: 'parquet',
        gzip: false,
        columns: layout.columns.map((c) => c.name),
        rows,
      };
      return { plan, types: Object.fromEntries(layout.columns.map((c) => [c.name, c.type])) };
    }
    const gzip = isGzip(name, head);
    const rest = (async function* () {
      if (!first.done) yield head;
      yield* hashed;
    })();
    const inflated = gzip ? gunzip(Readable.from(rest, { objectMode: false }), name, inflationCap(limits, info.size, name)) : rest;
    const utf8 = isUtf8(options.encoding);
    const bytes = utf8 ? inflated : decodeToUtf8(inflated, options.encoding);
    // gzip has no random access and a range of another encoding may cut a character: either is
    // staged as it is read here, so each segment reads its own byte range instead of inflating
    // (or decoding) the file from its start, which cost segments x file.
    const staged = (gzip || !utf8) && options.stage ? options.stage(fileIndex) : undefined;
    const copy = staged
      ? await StagedCopy.start(storage, staged, name, () => expectedSize(storage, file.location, info, gzip, options.signal), limits, options.signal)
      : undefined;
    const grown = options.onSegment && !gzip && utf8 ? growingPlan(inputName, file.location, info, segments, options.onSegment, options.rowBounds) : undefined;
    let text;
    let stagedInfo: ObjectInfo | undefined;
    try {
      text = await planText(name, bytes, fileIndex, firstRow, options, segments, copy, grown);
      stagedInfo = await copy?.end();
    } catch (err) {
      await copy?.abandon();
      throw err;
    }
    const plan: InputFilePlan = {
      location: file.location,
      info,
      sha256: text.complete ? hash.digest('hex') : null,
      syntax: text.syntax,
      gzip,
      columns: text.columns,
      rows: text.rows,
      ...(staged && stagedInfo && { staged: { location: staged, info: stagedInfo } }),
    };
    return { plan };
  } finally {
    raw.destroy();
  }
}

/**
 * The plan of a one-file input as planning finds its segments (see PlanOptions.onSegment): `closed`
 * segments of `all` have their end, and are added to it before it is heard.
 */
function growingPlan(
  location: string,
  file: Location,
  info: ObjectInfo,
  all: readonly SegmentPlan[],
  onSegment: (sofar: FilesInputPlan) => void,
  rowBounds: RowBounds | undefined,
): (closed: number, columns: string[]) => void {
  let sofar: FilesInputPlan | undefined;
  return (closed, columns) => {
    sofar ??= {
      location,
      files: [{ location: file, info, sha256: null, syntax: 'csv', gzip: false, columns, rows: 0 }],
      syntax: 'csv',
      columns,
      rows: 0,
      segments: [],
      planning: true,
      ...(rowBounds && { rowBounds }),
    };
    while (sofar.segments.length < closed) {
      const segment = all[sofar.segments.length];
      sofar.segments.push(segment);
      sofar.rows += segment.rows;
      sofar.files[0].rows += segment.rows;
    }
    onSegment(sofar);
  };
}

/** Parquet segments: whole row groups, about `segmentRows` rows each (a row group is never split). */
function planRowGroups(
  name: string,
  groups: readonly { rows: number }[],
  file: number,
  firstRow: number,
  options: PlanOptions,
  segments: SegmentPlan[],
): number {
  const limit = options.limit ?? Infinity;
  const maxSegments = (options.limits ?? DEFAULT_LIMITS).segments;
  let rows = 0;
  let current: SegmentPlan | undefined;
  for (const [g, group] of groups.entries()) {
    if (rows >= limit) break;
    const take = Math.min(group.rows, limit - rows);
    if (!current || current.rows >= options.segmentRows) {
      if (segments.length === maxSegments) throw tooManySegments(name, options.segmentRows, maxSegments, firstRow + rows + take, true);
      current = { index: segments.length, file, firstRow: firstRow + rows, rows: 0, start: g, end: g, firstLine: rows + 1 };
      segments.push(current);
    }
    current.rows += take;
    current.end = g + 1;
    rows += take;
  }
  return rows;
}

/**
 * One pass over a text file's UTF-8 bytes: checks they are UTF-8 with balanced quotes, reads the
 * header (CSV) or collects the keys of every row (JSON Lines), and cuts the rows into segments.
 * `copy`, when given, receives the bytes read (a staged copy of a file gzipped or in another encoding).
 * `grown`, when given, hears of each CSV segment whose end is found before the file's end.
 */
async function planText(
  name: string,
  bytes: AsyncIterable<Buffer>,
  file: number,
  firstRow: number,
  options: PlanOptions,
  segments: SegmentPlan[],
  copy?: StagedCopy,
  grown?: (closed: number, columns: string[]) => void,
): Promise<{ syntax: 'csv' | 'jsonl'; columns: string[]; rows: number; complete: boolean }> {
  const utf8 = new Utf8Check();
  let splitter: RowSplitter | undefined;
  let syntax: 'csv' | 'jsonl' = 'csv';
  let dialect: CsvDialect | undefined;
  let columns: string[] | undefined;
  let rows = 0;
  let limitEnd: number | undefined;
  const limit = options.limit ?? Infinity;
  const maxSegments = (options.limits ?? DEFAULT_LIMITS).segments;
  const seen = new Set<string>();
  const onRow = (row: RawRow) => {
    if (syntax === 'csv' && !columns) {
      if (row.over) throw rowOverError(row.over, `${name}: the header row`);
      columns = parseCsvHeader(row, name, dialect);
      return;
    }
    if (syntax === 'jsonl' && rows < limit) {
      columns ??= [];
      // A row past a bound is quarantined when read: its beginning alone names no keys.
      for (const key of (!row.over && jsonKeys(row)) || []) if (!seen.has(key)) columns.push((seen.add(key), key));
      if (columns.length > MAX_JSONL_KEYS) {
        throw new InputError(`${name}: more than ${MAX_JSONL_KEYS} distinct keys by line ${row.line}; JSON Lines rows must share a set of columns`);
      }
    }
    if (rows === limit) {
      limitEnd ??= row.offset;
      return;
    }
    if (rows % options.segmentRows === 0) {
      if (segments.length === maxSegments) throw tooManySegments(name, options.segmentRows, maxSegments, firstRow + rows + 1);
      // The segment before ends where this one starts: its rows are whole, their bytes checked.
      if (grown && syntax === 'csv' && columns && segments.length > mine) {
        segments[segments.length - 1].end = row.offset;
        grown(segments.length, columns);
        heard = true;
      }
      segments.push({ index: segments.length, file, firstRow: firstRow + rows, rows: 0, start: row.offset, end: 0, firstLine: row.line });
    }
    segments[segments.length - 1].rows++;
    rows++;
  };
  const mine = segments.length;
  let offset = 0;
  let heard = false;
  let hold = grown && options.holdAfterFirst;
  for await (const chunk of bytes) {
    options.onBytes?.(chunk.length);
    let data = chunk;
    if (!splitter) {
      const binary = describeBinary(chunk, options.encoding);
      if (binary) throw new InputError(`${name}: is ${binary}; export it as CSV or JSON Lines (or Parquet)`);
      syntax = detectSyntax(name, chunk);
      dialect = dialectForName(name, options);
      const bom = chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
      // onRow keeps no row: one RawRow serves them all.
      splitter = new RowSplitter(syntax, bom, 1, dialect, options.rowBounds, true);
      data = chunk.subarray(bom);
      offset = bom;
    }
    if (copy) await copy.write(chunk);
    const bad = utf8.push(data);
    if (bad >= 0) {
      const line = splitter.currentLine + data.subarray(0, bad).filter((b) => b === 0x0a).length;
      throw new InputError(
        `${name}: not UTF-8: invalid byte at offset ${offset + bad} (line ${line}); save the file as UTF-8, or name its encoding with --encoding`,
      );
    }
    splitter.push(data, onRow);
    offset += data.length;
    if (limitEnd !== undefined) break;
    if (heard && hold) {
      await hold;
      hold = undefined;
    }
  }
  if (limitEnd === undefined) {
    if (!utf8.end()) throw new InputError(`${name}: not UTF-8: the file ends inside a multi-byte character`);
    const ended = splitter?.end(onRow) ?? {};
    if (ended.unterminatedQuoteLine !== undefined) {
      throw new InputError(`${name}: a quoted field opened on line ${ended.unterminatedQuoteLine} is never closed (unterminated quote)`);
    }
  }
  if (!columns)
    throw new InputError(`${name}: the file is empty; expected ${syntax === 'csv' ? 'a header row naming the columns' : 'JSON objects, one per line'}`);
  const end = limitEnd ?? offset;
  for (let s = mine; s < segments.length; s++) segments[s].end = segments[s + 1]?.start ?? end;
  return { syntax, columns, rows, complete: limitEnd === undefined };
}
