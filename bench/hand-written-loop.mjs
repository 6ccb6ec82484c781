// What both yardsticks of `npm run bench` share: the streaming loop a user would write by hand
// instead of using batch-scorer. papaparse in, a fixed number of predict requests in flight, the
// predictions merged onto each row, CSV out in input order; no retries, no checks, no manifest.
// Each yardstick (hand-written-scorer.mjs on fetch, hand-written-undici.mjs on undici.request)
// says only how one batch is asked.
//   node bench/<yardstick>.mjs <input.csv> <output.csv> <service URL> [batch size] [concurrency]
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import Papa from 'papaparse';

const [input, output, service, batchArg = '1000', concurrencyArg = '4'] = process.argv.slice(2);
const batchSize = Number(batchArg);

/** The requests in flight, and where the model's predict is. */
export const concurrency = Number(concurrencyArg);
export const url = `${service}/api/projects/mindsdb/models/home_rentals_model/predict`;

const PREDICTIONS = ['rental_price', 'rental_price_confidence', 'rental_price_min', 'rental_price_max'];

/** Scores the input into the output, `ask(rows)` answering each batch's array of predictions. */
export async function scoreByHand(ask) {
  const predict = async (rows) => {
    const answer = await ask(rows);
    return rows.map((row, i) => {
      const merged = { ...row };
      for (const column of PREDICTIONS) merged[column] = answer[i][column];
      return merged;
    });
  };
  const out = createWriteStream(output);
  const inFlight = [];
  let header = true;
  const writeOldest = async () => {
    const rows = await inFlight.shift();
    if (!out.write(`${Papa.unparse(rows, { header, newline: '\n' })}\n`)) await once(out, 'drain');
    header = false;
  };

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
}
