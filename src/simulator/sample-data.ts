import { Readable } from 'node:stream';
import { HOME_RENTALS_INPUTS } from './models.js';

/**
 * Deterministic rows for the simulator's `home_rentals_model`, as CSV: the demo's example file
 * and the input of tests and benchmarks. They carry what real files do: quoted fields with
 * commas, quotes and line breaks, empty values, non-ASCII text, and a column the model ignores.
 */
export const RENTAL_COLUMNS = ['listing_id', ...HOME_RENTALS_INPUTS, 'notes'] as const;

const LOCATIONS = ['great', 'good', 'poor', ''];
const NEIGHBORHOODS = ['downtown', 'south_side', 'westbrae', 'alcatraz_ave', 'berkeley_hills', 'thowsand_oaks', 'Montréal-Nord', '中央区'];
const NOTES = ['', 'sunny, quiet', 'has a "view"', 'près du métro', 'line one\nline two', 'pets ok 🐶', 'needs work', ''];

/** The i-th row's values (0-based), as CSV text fields. */
export function rentalRow(i: number): string[] {
  const h = hash(i);
  const rooms = (h % 4) + 1;
  return [
    `L${String(i).padStart(8, '0')}`,
    String(rooms),
    String((h >>> 3) % 3 === 0 ? '' : ((h >>> 3) % 3) + 0),
    String(300 + ((h >>> 5) % 1700)),
    LOCATIONS[(h >>> 7) % LOCATIONS.length],
    String((h >>> 9) % 90),
    String(1000 + ((h >>> 11) % 4000)),
    NEIGHBORHOODS[(h >>> 13) % NEIGHBORHOODS.length],
    NOTES[(h >>> 16) % NOTES.length],
  ];
}

/** CSV text of one row, quoting fields as RFC 4180 requires. */
export function csvLine(fields: readonly string[]): string {
  return `${fields.map((f) => (/[",\r\n]/.test(f) ? `"${f.replace(/"/g, '""')}"` : f)).join(',')}\n`;
}

/** A stream of a rentals CSV of `rows` data rows (header first), generated as it is read. */
export function rentalsCsv(rows: number, first = 0): Readable {
  let i = first;
  const end = first + rows;
  return Readable.from(
    (function* () {
      yield csvLine([...RENTAL_COLUMNS]);
      while (i < end) {
        let chunk = '';
        for (let k = 0; k < 1000 && i < end; k++, i++) chunk += csvLine(rentalRow(i));
        yield chunk;
      }
    })(),
  );
}

function hash(i: number): number {
  let x = (i + 0x9e3779b9) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}
