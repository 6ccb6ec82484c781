import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useQueueFixture } from '../helpers/queue.js';
import { tempDir, writeRentals } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'dry-run-token-5c2e8a91f4';
const MODEL = 'mindsdb/home_rentals_model';

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  tmp = await tempDir();
  await writeRentals(join(tmp.dir, 'rentals.csv'), 50);
  await writeFile(join(tmp.dir, 'duplicate-columns.csv'), 'number_of_rooms,number_of_rooms,sqft\n1,2,3\n');
  execFileSync('mkfifo', [join(tmp.dir, 'fifo.csv')]);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

/**
 * The probe: dry runs, read inside `serve`, answered 500 E_INTERNAL for the caller's own
 * mistakes. Each is a 4xx with its code now, and serve keeps answering (a FIFO is not opened,
 * so nothing blocks on it).
 */
describe('POST /runs with dryRun: the caller’s mistakes are 4xx with their code', () => {
  it.each([
    ['a missing input', 'missing.csv', MODEL, 422, 'E_INPUT_NOT_FOUND'],
    ['a FIFO', 'fifo.csv', MODEL, 422, 'E_INPUT_NOT_FOUND'],
    ['duplicate columns', 'duplicate-columns.csv', MODEL, 422, 'E_INPUT'],
    ['an unknown model', 'rentals.csv', 'mindsdb/no_such_model', 422, 'E_MODEL_NOT_FOUND'],
  ])('%s', async (_what, file, model, status, code) => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const res = await fetch(`${s.url}/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: join(tmp.dir, file), model, out: join(tmp.dir, 'out'), dryRun: true }),
    });
    const body = (await res.json()) as { error: string; message: string };
    expect([res.status, body.error], body.message).toEqual([status, code]);
    const health = await fetch(`${s.url}/healthz`);
    expect(health.status).toBe(200);
  });
});
