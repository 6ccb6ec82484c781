// npm run demo: starts the bundled simulator, scores examples/home_rentals.csv with the real CLI
// into ./runs/, and prints where the run folder is. Needs no Redis and no S3.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createSimulator } from '../dist/simulator/server.js';

const simulator = await createSimulator({ port: 0, latencyMs: 5 });
console.log(`simulator (a stand-in Model Query Service) at ${simulator.url}`);
const args = ['dist/cli.js', 'score', 'examples/home_rentals.csv', '--model', 'mindsdb/home_rentals_model', '--out', './runs', '--service', simulator.url];
console.log(`$ batch-scorer ${args.slice(1).join(' ')}`);
// Run as the installed command runs: through its first line, which sets the V8 and allocator
// options the product is measured with (`node` there is npm's PATH: the project's Node 24).
const child = spawn(args[0], args.slice(1), { stdio: 'inherit', env: { LOG_LEVEL: 'warn', ...process.env } });
const [code] = await once(child, 'exit');
await simulator.close();
if (code === 0) console.log('\nOpen the run folder above: predictions.csv, errors.jsonl, describe.json, manifest.json, _SUCCESS.');
process.exit(code ?? 1);
