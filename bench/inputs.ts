/**
 * Input files of the bench: the simulator's deterministic rentals rows (src/simulator/sample-data.ts)
 * as CSV, the same rows as JSON Lines, the CSV gzipped, and the CSV with malformed rows.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { csvLine, RENTAL_COLUMNS, rentalRow, rentalsCsv } from '../src/simulator/sample-data.js';

export type InputFormat = 'csv' | 'jsonl' | 'csv.gz';

/** Writes `rows` rentals rows in this format to `path`. */
export async function writeInput(path: string, rows: number, format: InputFormat): Promise<void> {
  if (format === 'csv') await pipeline(rentalsCsv(rows), createWriteStream(path));
  else if (format === 'jsonl') await pipeline(rentalsJsonl(rows), createWriteStream(path));
  else await pipeline(rentalsCsv(rows), createGzip(), createWriteStream(path));
}

/**
 * Writes rentalsCsv's rows to `path` with one row in `every` given a field too many: malformed, so
 * quarantined and never sent. Every other row is the clean file's. Answers how many are malformed.
 */
export async function writeDirtyCsv(path: string, rows: number, every: number): Promise<number> {
  const malformed = (i: number) => i % every === every >> 1;
  await pipeline(
    rowLines(rows, (i) => csvLine(malformed(i) ? [...rentalRow(i), 'malformed'] : rentalRow(i)), csvLine(RENTAL_COLUMNS)),
    createWriteStream(path),
  );
  return Math.max(0, Math.ceil((rows - (every >> 1)) / every));
}

/** The rows of rentalsCsv as JSON objects, one a line: the same text values a CSV reader sees. */
function rentalsJsonl(rows: number): Readable {
  return rowLines(rows, (i) => {
    const values = rentalRow(i);
    return `${JSON.stringify(Object.fromEntries(RENTAL_COLUMNS.map((c, j) => [c, values[j]])))}\n`;
  });
}

/** A stream of `header` and then `line(i)` for rows 0 to `rows`, a thousand rows a chunk. */
export function rowLines(rows: number, line: (i: number) => string, header = ''): Readable {
  return Readable.from(
    (function* () {
      if (header) yield header;
      for (let i = 0; i < rows;) {
        let chunk = '';
        for (let k = 0; k < 1000 && i < rows; k++, i++) chunk += line(i);
        yield chunk;
      }
    })(),
  );
}

/**
 * Physical lines of a CSV of these rows written with a header: more than rows + 1, as some notes
 * hold a line break inside their quotes. Lets a scorer's output be checked by counting lines.
 */
export function csvLineCount(rows: number): number {
  let lines = rows + 1;
  for (let i = 0; i < rows; i++) for (const field of rentalRow(i)) lines += field.split('\n').length - 1;
  return lines;
}

/** Counts the line breaks of a file, streaming it. */
export async function countLines(path: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
  }
  return lines;
}
