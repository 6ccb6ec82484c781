// The parse floor of `npm run bench`: only what the yardsticks (hand-written-loop.mjs) do to read their input
// (papaparse over a UTF-8 stream, header, dynamicTyping, skipEmptyLines), counting rows. No
// scorer that reads CSV this way can use less CPU per row; prints the row count.
//   node bench/parse-floor.mjs <input.csv>
import { createReadStream } from 'node:fs';
import Papa from 'papaparse';

const parser = Papa.parse(Papa.NODE_STREAM_INPUT, { header: true, dynamicTyping: true, skipEmptyLines: true });
createReadStream(process.argv[2], 'utf8').pipe(parser);
let rows = 0;
for await (const _row of parser) rows++;
console.log(rows);
