import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture } from '../helpers/queue.js';
import { score, startSimulator, tempDir } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const PARTS = 5;
const ROWS_PER_PART = 400;
const MODEL = 'mindsdb/home_rentals_model';
const TOKEN = 'tok-5d1e7a9c3b2f4680';
const bearer = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let tmp: Awaited<ReturnType<typeof tempDir>>;
let exports: string;
beforeAll(async () => {
  tmp = await tempDir();
  exports = join(tmp.dir, 'exports');
  await mkdir(join(exports, 'day=2026-11-21'), { recursive: true });
  for (let p = 0; p < PARTS; p++) {
    let text = csvLine(RENTAL_COLUMNS);
    for (let i = p * ROWS_PER_PART; i < (p + 1) * ROWS_PER_PART; i++) text += csvLine(rentalRow(i));
    await writeFile(join(exports, 'day=2026-11-21', `part-${p}.csv`), text);
  }
  await writeFile(join(exports, 'day=2026-11-21', 'README.txt'), 'not data');
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

describe('many files through the queue and the API', () => {
  it('POST /runs takes a glob that two workers score file by file, the same bytes as score; dryRun answers the plan and enqueues nothing', async () => {
    await f.setup();
    f.worker();
    f.worker();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const glob = join(exports, '**', 'part-*.csv');
    const out = join(tmp.dir, 'queue');

    const dry = await fetch(`${s.url}/runs`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ input: glob, model: MODEL, out, options: { segmentRows: 150, runId: 'dry' }, dryRun: true }),
    });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toMatchObject({
      dryRun: true,
      rows: PARTS * ROWS_PER_PART,
      files: Array.from({ length: PARTS }, (_, p) => ({ location: join(exports, 'day=2026-11-21', `part-${p}.csv`), rows: ROWS_PER_PART })),
      segments: PARTS * 3,
      // Eight canary batches of the first rows, a segment's 150 (or the 100 that end a file) each.
      canary: { batches: 8, rows: 150 + 150 + 100 + 150 + 150 + 100 + 150 + 150, scored: 1100, quarantined: 0 },
      estimate: { requests: { low: PARTS * 3, expected: PARTS * 3, high: PARTS * 3 }, rows: { expected: PARTS * ROWS_PER_PART } },
    });
    expect(existsSync(out)).toBe(false);
    expect(await f.queue.get('dry')).toBeUndefined();

    const submission = { input: glob, model: MODEL, out, options: { segmentRows: 150, runId: 'glob', outputPerFile: true } };
    const posted = await fetch(`${s.url}/runs`, { method: 'POST', headers: bearer, body: JSON.stringify(submission) });
    expect(posted.status).toBe(201);
    const done = await f.finished('glob');
    expect(done.state).toBe('succeeded');
    const outputs = (await readdir(join(out, 'glob', 'predictions'))).sort();
    expect(outputs).toEqual(Array.from({ length: PARTS }, (_, p) => `part-${p}.csv`));

    await score(glob, join(tmp.dir, 'direct'), { service: f.sim.url, runId: 'glob', segmentRows: 150, outputPerFile: true });
    for (const name of outputs) {
      expect((await readFile(join(out, 'glob', 'predictions', name))).equals(await readFile(join(tmp.dir, 'direct', 'glob', 'predictions', name)))).toBe(true);
    }
  });
});

describe('score --dry-run', () => {
  it('prints the plan and the canary, and writes nothing', async () => {
    const sim = await startSimulator();
    try {
      const out = join(tmp.dir, 'dry-out');
      const env = { MODEL_SERVICE_URL: sim.url };
      const dryRun = (input: string, ...extra: string[]) =>
        runCli(
          ['score', input, '--model', MODEL, '--out', out, '--segment-rows', '150', '--batch-size', '100', '--concurrency', '8', '--dry-run', ...extra],
          env,
        );
      // The folder's README.txt is read too, and does not fit: a dry run finds what a run would.
      const refused = await dryRun(`${exports}/`);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('README.txt');

      const human = await dryRun(join(exports, '*', 'part-*.csv'));
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toContain(`input: ${PARTS} files, ${PARTS * ROWS_PER_PART} rows, ${PARTS * 3} segments`);
      expect(human.stdout).toContain(`requests: ${PARTS * 5} (low ${PARTS * 5}, high ${PARTS * 5})`);
      // Batches of 100 in segments of 150, 150 and 100 a file: 100, 50, 100, 50, 100, then 100, 50, 100.
      expect(human.stdout).toMatch(/canary: 8 batches, 650 rows in \d+ ms \(650 scored, 0 quarantined\)/);
      expect(human.stdout).toMatch(/estimated duration: [\d.]+ s \(low [\d.]+ s, high [\d.]+ s\) at concurrency 8/);
      expect(human.stdout).toMatch(/estimate rests on: 8 canary batches \(650 rows\) sent 4 at a time; latency after the first wave p50/);
      expect(human.stdout).toContain('outputs: predictions.csv');

      const json = await dryRun(join(exports, '*', 'part-*.csv'), '--json', '--keep-columns', 'listing_id');
      expect(json.code).toBe(0);
      const report = JSON.parse(json.stdout) as { dryRun: boolean; columns: string[] };
      expect(report).toMatchObject({ dryRun: true, estimate: { requests: { expected: PARTS * 5 } } });
      expect(report.columns.slice(0, 2)).toEqual(['listing_id', 'rental_price']);
      expect(existsSync(out)).toBe(false);
    } finally {
      await sim.close();
    }
  });
});
