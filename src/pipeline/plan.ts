import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { InputError } from '../errors.js';
import { detectSyntax, isGzip } from '../formats/input-format.js';
import { jsonKeys, parseCsvHeader } from '../formats/row-parser.js';
import { RowSplitter, type RawRow, type RowSyntax } from '../formats/row-splitter.js';
import { Utf8Check } from '../formats/utf8-check.js';
import { formatLocation, type Location } from '../storage/location.js';
import type { ObjectInfo, Storage } from '../storage/storage-types.js';
import { gunzip, inputMissing } from './input-bytes.js';

/** A slice of the input that one worker scores on its own: whole rows, as a byte range. */
const segmentPlanSchema = z.object({
  index: z.int().min(0),
  /** 0-based index of the segment's first data row. */
  firstRow: z.int().min(0),
  rows: z.int().min(0),
  /** Byte range `[start, end)` in the (decompressed) input. */
  start: z.int().min(0),
  end: z.int().min(0),
  /** Physical line of the segment's first row, for messages. */
  firstLine: z.int().min(1),
});
export type SegmentPlan = z.output<typeof segmentPlanSchema>;

/** What one pass over the input found: its identity, shape and the segments to score. */
export const inputPlanSchema = z.object({
  location: z.string(),
  info: z.object({ size: z.int().min(0), etag: z.string().optional(), mtimeMs: z.number().optional() }) satisfies z.ZodType<ObjectInfo>,
  /** sha256 of the stored bytes; null with --limit, which stops reading early. */
  sha256: z.string().nullable(),
  syntax: z.enum(['csv', 'jsonl']) satisfies z.ZodType<RowSyntax>,
  gzip: z.boolean(),
  columns: z.array(z.string()),
  /** Data rows to score (all of them, or the first --limit). */
  rows: z.int().min(0),
  segments: z.array(segmentPlanSchema),
});
export type InputPlan = z.output<typeof inputPlanSchema>;

/** Distinct keys a JSON Lines file may have: columns, not data (a key per row would be a bug upstream). */
const MAX_JSONL_KEYS = 10_000;

export interface PlanOptions {
  segmentRows: number;
  limit?: number;
  signal?: AbortSignal;
}

/**
 * Reads the input once: hashes it, checks it is UTF-8 with balanced quotes, reads the header (CSV)
 * or collects the keys of every row (JSON Lines) and cuts the data rows into segments of `segmentRows` at row boundaries. Nothing is kept but offsets,
 * so memory does not grow with the file.
 */
export async function planInput(storage: Storage, location: Location, options: PlanOptions): Promise<InputPlan> {
  const name = formatLocation(location);
  const info = await storage.stat(location, options.signal).catch(inputMissing);
  const raw = await storage.read(location, { expect: info, signal: options.signal }).catch(inputMissing);
  const hash = createHash('sha256');
  const hashed = (async function* () {
    for await (const chunk of raw as AsyncIterable<Buffer>) {
      hash.update(chunk);
      yield chunk;
    }
  })();

  const first = await hashed.next();
  const head: Buffer = first.done ? Buffer.alloc(0) : first.value;
  const gzip = isGzip(name, head);
  const rest = (async function* () {
    if (!first.done) yield head;
    yield* hashed;
  })();
  const bytes = gzip ? gunzip(Readable.from(rest, { objectMode: false }), name) : rest;

  const utf8 = new Utf8Check();
  let splitter: RowSplitter | undefined;
  let syntax: RowSyntax = 'csv';
  let columns: string[] | undefined;
  const segments: SegmentPlan[] = [];
  let rows = 0;
  let limitEnd: number | undefined;
  const limit = options.limit ?? Infinity;

  // JSON Lines rows need not share keys: the columns are every key any row has, in order of appearance.
  const seen = new Set<string>();
  const onRow = (row: RawRow) => {
    if (syntax === 'csv' && !columns) {
      columns = parseCsvHeader(row, name);
      return;
    }
    if (syntax === 'jsonl' && rows < limit) {
      columns ??= [];
      for (const key of jsonKeys(row) ?? []) if (!seen.has(key)) columns.push((seen.add(key), key));
      if (columns.length > MAX_JSONL_KEYS) {
        throw new InputError(`${name}: more than ${MAX_JSONL_KEYS} distinct keys by line ${row.line}; JSON Lines rows must share a set of columns`);
      }
    }
    if (rows === limit) {
      limitEnd ??= row.offset;
      return;
    }
    if (rows % options.segmentRows === 0) {
      segments.push({ index: segments.length, firstRow: rows, rows: 0, start: row.offset, end: 0, firstLine: row.line });
    }
    segments[segments.length - 1].rows++;
    rows++;
  };

  let offset = 0;
  try {
    for await (const chunk of bytes) {
      let data = chunk;
      if (!splitter) {
        syntax = detectSyntax(name, chunk);
        const bom = chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0;
        splitter = new RowSplitter(syntax, bom);
        data = chunk.subarray(bom);
        offset = bom;
      }
      const bad = utf8.push(data);
      if (bad >= 0) {
        const line = splitter.currentLine + data.subarray(0, bad).filter((b) => b === 0x0a).length;
        throw new InputError(`${name}: not UTF-8: invalid byte at offset ${offset + bad} (line ${line}); save the file as UTF-8`);
      }
      splitter.push(data, onRow);
      offset += data.length;
      if (limitEnd !== undefined) break;
    }
    if (limitEnd === undefined) {
      if (!utf8.end()) throw new InputError(`${name}: not UTF-8: the file ends inside a multi-byte character`);
      const ended = splitter?.end(onRow) ?? {};
      if (ended.unterminatedQuoteLine !== undefined) {
        throw new InputError(`${name}: a quoted field opened on line ${ended.unterminatedQuoteLine} is never closed (unterminated quote)`);
      }
    }
  } finally {
    raw.destroy();
  }
  if (!columns)
    throw new InputError(`${name}: the file is empty; expected ${syntax === 'csv' ? 'a header row naming the columns' : 'JSON objects, one per line'}`);

  const end = limitEnd ?? offset;
  segments.forEach((s, i) => (s.end = segments[i + 1]?.start ?? end));
  return {
    location: name,
    info,
    sha256: limitEnd === undefined ? hash.digest('hex') : null,
    syntax,
    gzip,
    columns,
    rows,
    segments,
  };
}
