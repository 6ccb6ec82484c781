// The yardstick of `npm run bench` on `fetch`: the streaming scorer a user would write by hand
// instead of using batch-scorer (the loop is hand-written-loop.mjs), each batch a `fetch` whose
// answer is read with `json()`.
//   node bench/hand-written-scorer.mjs <input.csv> <output.csv> <service URL> [batch size] [concurrency]
import { scoreByHand, url } from './hand-written-loop.mjs';

await scoreByHand(async (rows) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: rows }) });
  if (!res.ok) throw new Error(`predict answered ${res.status}: ${await res.text()}`);
  return res.json();
});
