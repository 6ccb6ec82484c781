import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { runCli } from '../helpers/cli.js';
import { DATABASE_URL, privateSchema } from '../helpers/postgres.js';
import { useQueueFixture } from '../helpers/queue.js';
import { rentalsTable } from '../helpers/rentals-table.js';
import { score, tempDir } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const MODEL = 'mindsdb/home_rentals_model';
const ROWS = 1_200;
const TOKEN = 'tok-0c5e9a7b3d1f2468';

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

async function outputs(out: string, runId: string): Promise<{ predictions: Buffer; manifest: Manifest }> {
  const folder = join(out, runId);
  return {
    predictions: await readFile(join(folder, 'predictions.csv')),
    manifest: JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest,
  };
}

describe('a database input through the queue', () => {
  it('is scored by two worker processes, from enqueue and from POST /runs, into the bytes score writes', async () => {
    const s = await privateSchema();
    const table = await rentalsTable(s, 'rentals', ROWS);
    await f.setup();
    f.worker();
    f.worker();
    const direct = join(tmp.dir, 'direct');
    await score(DATABASE_URL, direct, { service: f.sim.url, runId: 'direct', table, segmentRows: 200, batchSize: 50 });
    const expected = await outputs(direct, 'direct');

    const queued = join(tmp.dir, 'queued');
    const enqueued = await runCli(
      [
        'enqueue',
        DATABASE_URL,
        '--table',
        table,
        '--model',
        MODEL,
        '--out',
        queued,
        '--segment-rows',
        '200',
        '--batch-size',
        '50',
        '--run-id',
        'cli',
        '--wait',
      ],
      f.env(),
    );
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const fromCli = await outputs(queued, 'cli');
    expect(fromCli.predictions.equals(expected.predictions)).toBe(true);
    // Six segments over two workers: the checksums are the rows', whoever read them.
    expect(fromCli.manifest.queue?.workers).toHaveLength(2);
    expect(fromCli.manifest.database).toEqual(expected.manifest.database);

    const api = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const post = (body: unknown) => fetch(`${api.url}/runs`, { method: 'POST', headers, body: JSON.stringify(body) });
    const posted = await post({ input: DATABASE_URL, model: MODEL, out: queued, options: { table, segmentRows: 200, batchSize: 50, runId: 'api' } });
    expect(posted.status).toBe(201);
    expect((await f.finished('api')).state).toBe('succeeded');
    expect((await outputs(queued, 'api')).predictions.equals(expected.predictions)).toBe(true);

    // Refused at the door, naming what to fix, never echoing a password.
    const password = await post({ input: 'postgresql://postgres:pa55-w0rd@127.0.0.1/test', model: MODEL, out: queued, options: { table } });
    expect(password.status).toBe(400);
    const refusal = await password.text();
    expect(refusal).toContain('carries a password: remove it and set PGPASSWORD');
    expect(refusal).not.toContain('pa55-w0rd');
    const noRows = await post({ input: DATABASE_URL, model: MODEL, out: queued, options: { segmentBy: 'id' } });
    expect(noRows.status).toBe(400);
    expect(await noRows.text()).toContain(`${DATABASE_URL} is a database: name its rows with table schema.table or query 'SELECT ...'`);
  });
});
