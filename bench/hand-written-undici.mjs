// The stronger yardstick of `npm run bench`: the scorer a user who knows undici would write. The
// same as hand-written-scorer.mjs, but each predict is an `undici.request` on a keep-alive Agent of
// `concurrency` connections (no WHATWG Response or stream per request), the answer read with
// `body.json()`. papaparse in, JSON.stringify out, CSV lines written in input order.
//   node bench/hand-written-undici.mjs <input.csv> <output.csv> <service URL> [batch size] [concurrency]
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import Papa from 'papaparse';
import { Agent, request } from 'undici';

const [input, output, service, batchArg = '1000', concurrencyArg = '4'] = process.argv.slice(2);
const batchSize = Number(batchArg);
const concurrency = Number(concurrencyArg);
const url = `${service}/api/projects/mindsdb/models/home_rentals_model/predict`;
const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
const PREDICTIONS = ['rental_price', 'rental_price_confidence', 'rental_price_min', 'rental_price_max'];

async function predict(rows) {
  const body = JSON.stringify({ data: rows });
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher });
  if (res.statusCode !== 200) throw new Error(`predict answered ${res.statusCode}: ${await res.body.text()}`);
  const answer = await res.body.json();
  return rows.map((row, i) => {
    const merged = { ...row };
    for (const column of PREDICTIONS) merged[column] = answer[i][column];
    return merged;
  });
}

const out = createWriteStream(output);
const inFlight = [];
let header = true;
async function writeOldest() {
  const rows = await inFlight.shift();
  if (!out.write(`${Papa.unparse(rows, { header, newline: '\n' })}\n`)) await once(out, 'drain');
  header = false;
}

const parser = Papa.parse(Papa.NODE_STREAM_INPUT, { header: true, dynamicTyping: true, skipEmptyLines: true });
createReadStream(input, 'utf8').pipe(parser);
let batch = [];
for await (const row of parser) {
  batch.push(row);
  if (batch.length < batchSize) continue;
  inFlight.push(predict(batch));
  batch = [];
  if (inFlight.length >= concurrency) await writeOldest();
}
if (batch.length > 0) inFlight.push(predict(batch));
while (inFlight.length > 0) await writeOldest();
out.end();
await once(out, 'finish');
await dispatcher.close();
