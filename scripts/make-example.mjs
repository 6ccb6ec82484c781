// Writes examples/home_rentals.csv, the demo's bundled input (deterministic: same bytes every time).
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { rentalsCsv } from '../dist/simulator/sample-data.js';

const rows = Number(process.argv[2] ?? 25_000);
await pipeline(rentalsCsv(rows), createWriteStream(new URL('../examples/home_rentals.csv', import.meta.url)));
console.log(`wrote examples/home_rentals.csv with ${rows} rows`);
