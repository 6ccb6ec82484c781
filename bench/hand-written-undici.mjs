// The stronger yardstick of `npm run bench`, the one its CPU target is set against: the scorer a
// user who knows undici would write (the loop is hand-written-loop.mjs), each batch an
// `undici.request` on a keep-alive Agent of `concurrency` connections (no WHATWG Response or
// stream per request), the answer read with `body.json()`.
//   node bench/hand-written-undici.mjs <input.csv> <output.csv> <service URL> [batch size] [concurrency]
import { Agent, request } from 'undici';
import { concurrency, scoreByHand, url } from './hand-written-loop.mjs';

const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
await scoreByHand(async (rows) => {
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: rows }), dispatcher });
  if (res.statusCode !== 200) throw new Error(`predict answered ${res.statusCode}: ${await res.body.text()}`);
  return res.body.json();
});
await dispatcher.close();
