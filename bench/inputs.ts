/**
 * Input files of the bench: the simulator's deterministic rentals rows (src/simulator/sample-data.ts)
 * as CSV, the same rows as JSON Lines, and the CSV gzipped.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { RENTAL_COLUMNS, rentalRow, rentalsCsv } from '../src/simulator/sample-data.js';

export type InputFormat = 'csv' | 'jsonl' | 'csv.gz';

/** Writes `rows` rentals rows in this format to `path`. */
export async function writeInput(path: string, rows: number, format: InputFormat): Promise<void> {
  if (format === 'csv') await pipeline(rentalsCsv(rows), createWriteStream(path));
  else if (format === 'jsonl') await pipeline(rentalsJsonl(rows), createWriteStream(path));
  else await pipeline(rentalsCsv(rows), createGzip(), createWriteStream(path));
}

/** The rows of rentalsCsv as JSON objects, one a line: the same text values a CSV reader sees. */
function rentalsJsonl(rows: number): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < rows;) {
        let chunk = '';
        for (let k = 0; k < 1000 && i < rows; k++, i++) {
          const values = rentalRow(i);
          chunk += `${JSON.stringify(Object.fromEntries(RENTAL_COLUMNS.map((c, j) => [c, values[j]])))}\n`;
        }
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
