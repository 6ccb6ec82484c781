import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { RunStatus } from '../../src/queue/producer.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { byOutcome, parseSamples } from '../helpers/metrics.js';
import { freePort, useQueueFixture } from '../helpers/queue.js';
import { useServeProcesses } from '../helpers/serve.js';
import { startSimulator, tempDir } from '../helpers/scoring.js';

// A run with one bad row in ten and --max-error-rate 0.01 is ten times over its allowance: it must
// fail about as soon as it has read a tenth of its rows, whether one process scores it or two
// workers share its segments, and every count of the failed run must be the rows of errors.jsonl.

const ROWS = 12_000;
const MODEL = 'mindsdb/home_rentals_model';
const TOKEN = 'error-allowance-test-token';
const OPTIONS = ['--segment-rows', '1000', '--batch-size', '50', '--max-error-rate', '0.01'];
/** One row in ten has a field too many: quarantined as malformed, and never sent to the model. */
const isBad = (i: number) => i % 10 === 3;

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'one-in-ten-bad.csv');
  const lines = [csvLine(RENTAL_COLUMNS)];
  for (let i = 0; i < ROWS; i++) lines.push(isBad(i) ? csvLine([...rentalRow(i), 'extra']) : csvLine(rentalRow(i)));
  await writeFile(input, lines.join(''));
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

/** errors.jsonl of a run folder: each line's row number, checked to be one of the bad rows. */
async function quarantinedRows(folder: string): Promise<number[]> {
  const lines = (await readFile(join(folder, 'errors.jsonl'), 'utf8')).trim().split('\n');
  const rows = lines.map((l) => (JSON.parse(l) as { row: number }).row);
  expect(rows.every((row) => isBad(row - 1))).toBe(true);
  return rows;
}

async function manifestOf(folder: string): Promise<Manifest> {
  return JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
}

describe('one error allowance per run', () => {
  it('a queued run over --max-error-rate fails before half its rows are sent, and every count of it is its errors.jsonl', async () => {
    await f.setup({ latencyMs: 5 });
    const ports = [await freePort(), await freePort()];
    // The default lock: one taken over from a loaded worker would score rows twice, and its metrics count them twice.
    for (const port of ports) f.worker(['--metrics-port', String(port), '--lock-duration', '30000'], { API_TOKEN: TOKEN });
    const out = join(tmp.dir, 'queued');

    const waited = await runCli(['enqueue', input, '--model', MODEL, '--out', out, '--run-id', 'over', ...OPTIONS, '--wait'], f.env());
    expect(waited.code).toBe(1);
    // Every row sent is one the model answered (no faults, no bad row is sent): the one-row probe, and the rows scored.
    expect(f.sim.stats.predictRows).toBeLessThan(ROWS / 2);

    const folder = join(out, 'over');
    const quarantined = (await quarantinedRows(folder)).length;
    expect(quarantined).toBeGreaterThan(120);
    const manifest = await manifestOf(folder);
    expect(manifest).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE' }, counts: { rowsQuarantined: quarantined } });
    expect(manifest.counts!.rowsIn).toBe(manifest.counts!.rowsScored + quarantined);
    // Its message counts what errors.jsonl holds, beside the allowance.
    const message = `${quarantined} of the ${manifest.counts!.rowsIn} rows read were quarantined, past --max-error-rate 0.01, which allows 120 of the input's 12000 rows`;
    expect(manifest.error!.message).toContain(message);
    expect(waited.stderr).toContain(`failed: ${message}`);

    // Failed at once, not tried again.
    const status = JSON.parse((await runCli(['status', 'over', '--json'], f.env())).stdout) as RunStatus;
    expect(status).toMatchObject({ state: 'failed', attempts: 1, progress: { rowsQuarantined: quarantined } });
    expect(status.result).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE', message: manifest.error!.message } });

    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const get = (path: string) => fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await (await get('/runs/over')).json()).toMatchObject({ state: 'failed', progress: { rowsQuarantined: quarantined } });
    const page = await (await get('/ui/runs/over')).text();
    expect(page).toContain(` of ${quarantined.toLocaleString('en-US')}, from errors.jsonl.`);

    // The workers quarantined exactly these rows between them.
    const scraped = await Promise.all(
      ports.map(async (port) =>
        parseSamples(await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()),
      ),
    );
    expect(scraped.reduce((sum, samples) => sum + (byOutcome(samples, 'batch_scorer_rows_total').quarantined ?? 0), 0)).toBe(quarantined);
  });

  it('a segment without quarantined rows stops too, once its siblings have taken the run past its budget', async () => {
    // Four segments of 10,000 rows, for two workers scoring two each: all bad rows are a block of
    // the first (malformed: quarantined without asking the model), and the other three would be
    // scored to their end if they looked at their own rows only.
    const rows = 40_000;
    const clustered = join(tmp.dir, 'bad-block.csv');
    const lines = [csvLine(RENTAL_COLUMNS)];
    for (let i = 0; i < rows; i++) lines.push(i >= 500 && i < 1500 ? csvLine([...rentalRow(i), 'extra']) : csvLine(rentalRow(i)));
    await writeFile(clustered, lines.join(''));
    await f.setup({ latencyMs: 50 });
    f.worker();
    f.worker();
    const out = join(tmp.dir, 'clustered');
    const options = ['--segment-rows', '10000', '--batch-size', '50', '--max-error-rate', '0.01'];
    const waited = await runCli(['enqueue', clustered, '--model', MODEL, '--out', out, '--run-id', 'first', ...options, '--wait'], f.env());
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain('[E_ERROR_RATE]');
    expect(f.sim.stats.predictRows).toBeLessThan(rows / 4);
    const status = JSON.parse((await runCli(['status', 'first', '--json'], f.env())).stdout) as RunStatus;
    expect(status.progress?.rowsQuarantined).toBe((await readFile(join(out, 'first', 'errors.jsonl'), 'utf8')).trim().split('\n').length);
  });

  it('direct mode fails as soon, with the same counts', async () => {
    const sim = await startSimulator({ latencyMs: 5 });
    try {
      const out = join(tmp.dir, 'direct');
      const r = await runCli(['score', input, '--model', MODEL, '--out', out, '--run-id', 'over', ...OPTIONS], { MODEL_SERVICE_URL: sim.url });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/\[E_ERROR_RATE\]/);
      expect(sim.stats.predictRows).toBeLessThan(ROWS / 2);
      const quarantined = (await quarantinedRows(join(out, 'over'))).length;
      expect(quarantined).toBeGreaterThan(120);
      expect(await manifestOf(join(out, 'over'))).toMatchObject({ state: 'failed', counts: { rowsQuarantined: quarantined } });
    } finally {
      await sim.close();
    }
  });
});
