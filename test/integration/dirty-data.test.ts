import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { parseJsonLines, startSimulator, tempDir } from '../helpers/scoring.js';

// A malformed row is quarantined without ending the batch it was read in: a file with one in 40
// is sent in about as many requests as the same file clean, and each good row's output line is the
// clean run's, byte for byte.

const ROWS = 4_000;
const MODEL = 'mindsdb/home_rentals_model';
// Two segments of 20 batches each; 1 row in 40 quarantined is within the error budget.
const OPTIONS = ['--segment-rows', '2000', '--batch-size', '100', '--max-error-rate', '0.05'];
/**
 * One row in 40, and the rows at the edges of the segments and of the file: a malformed row held
 * before a batch's first row, and after its last.
 */
const isBad = (i: number) => i % 40 === 17 || [0, 1999, 2000, ROWS - 1].includes(i);

let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  [sim, tmp] = await Promise.all([startSimulator(), tempDir()]);
});
afterAll(() => Promise.all([sim.close(), tmp.cleanup()]));

interface Written {
  path: string;
  /** The line each bad row starts on. */
  badLines: number[];
}

/** A rentals file of ROWS rows, the `isBad` ones malformed when `dirty`: a field too many (CSV), or a line cut short (JSON Lines). */
async function writeInput(name: string, syntax: 'csv' | 'jsonl', dirty: boolean): Promise<Written> {
  const lines: string[] = syntax === 'csv' ? [csvLine(RENTAL_COLUMNS)] : [];
  const badLines: number[] = [];
  let line = lines.length + 1;
  for (let i = 0; i < ROWS; i++) {
    const values = rentalRow(i);
    const bad = dirty && isBad(i);
    let text: string;
    if (syntax === 'csv') text = csvLine(bad ? [...values, 'extra'] : values);
    else {
      const json = JSON.stringify(Object.fromEntries(RENTAL_COLUMNS.map((c, k) => [c, values[k]])));
      text = `${bad ? json.slice(0, 30) : json}\n`;
    }
    if (bad) badLines.push(line);
    line += text.split('\n').length - 1;
    lines.push(text);
  }
  const path = join(tmp.dir, `${name}.${syntax}`);
  await writeFile(path, lines.join(''));
  return { path, badLines };
}

interface Scored {
  manifest: Manifest;
  /** The simulator's predict requests during the run (planning's probe included). */
  predicts: number;
  /** The output's rows as written, by listing id. */
  rows: Map<string, string>;
  errors: Record<string, unknown>[];
}

/** Scores `input` through the CLI; its output rows are told apart by the listing id each starts with. */
async function scoreThroughCli(input: string, runId: string, options: string[] = []): Promise<Scored> {
  const out = join(tmp.dir, 'out');
  const before = sim.stats.predictRequests;
  const r = await runCli(['score', input, '--model', MODEL, '--out', out, '--run-id', runId, '--json', ...OPTIONS, ...options], { MODEL_SERVICE_URL: sim.url });
  expect(r.code, r.stderr).toBe(0);
  const folder = join(out, runId);
  const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
  const output = await readFile(join(folder, `predictions.${input.endsWith('.csv') ? 'csv' : 'jsonl'}`), 'utf8');
  // A CSV row's quoted notes may hold a line break, so rows start where a line starts with a listing id.
  const texts = output.split(/\n(?=L\d{8},|\{"listing_id")/);
  if (input.endsWith('.csv')) texts.shift();
  const rows = new Map(texts.map((text) => [/L\d{8}/.exec(text)![0], text.trimEnd()]));
  expect(rows.size).toBe(texts.length);
  const errorsText = await readFile(join(folder, 'errors.jsonl'), 'utf8');
  const errors = errorsText === '' ? [] : parseJsonLines(errorsText);
  return { manifest, predicts: sim.stats.predictRequests - before, rows, errors };
}

describe('a malformed row costs what it should', () => {
  for (const syntax of ['csv', 'jsonl'] as const) {
    it(`${syntax}: one in 40 is sent in as many requests as the clean file, with the same output for every good row`, async () => {
      const clean = await writeInput(`clean-${syntax}`, syntax, false);
      const dirty = await writeInput(`dirty-${syntax}`, syntax, true);
      const a = await scoreThroughCli(clean.path, `clean-${syntax}`);
      const b = await scoreThroughCli(dirty.path, `dirty-${syntax}`);

      const bad = Array.from({ length: ROWS }, (_, i) => i).filter(isBad);
      expect(b.manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS - bad.length, rowsQuarantined: bad.length });
      expect(a.manifest.counts!.requests).toBe(40);
      expect(b.manifest.counts!.requests).toBeGreaterThanOrEqual(a.manifest.counts!.requests * 0.9);
      expect(b.manifest.counts!.requests).toBeLessThanOrEqual(a.manifest.counts!.requests * 1.1);
      expect(b.predicts).toBeLessThanOrEqual(a.predicts * 1.1);

      const good = Array.from({ length: ROWS }, (_, i) => `L${String(i).padStart(8, '0')}`).filter((_, i) => !isBad(i));
      expect([...b.rows.keys()]).toEqual(good);
      for (const id of good) expect(b.rows.get(id)).toBe(a.rows.get(id));

      expect(a.errors).toEqual([]);
      expect(b.errors.map((e) => [e.row, e.line, e.title])).toEqual(bad.map((i, k) => [i + 1, dirty.badLines[k], 'Malformed row']));
    });
  }

  it('errors.jsonl keeps input order where malformed rows and rows the engine refuses share a batch', async () => {
    const location = RENTAL_COLUMNS.indexOf('location');
    const refused = (i: number) => i % 40 === 5 || i % 40 === 30;
    const lines = [csvLine(RENTAL_COLUMNS)];
    for (let i = 0; i < 1_000; i++) {
      const values = rentalRow(i);
      if (refused(i)) values[location] = '__engine_error__';
      lines.push(csvLine(isBad(i) ? [...values, 'extra'] : values));
    }
    const input = join(tmp.dir, 'mixed.csv');
    await writeFile(input, lines.join(''));
    const { manifest, errors } = await scoreThroughCli(input, 'mixed', ['--max-error-rate', '0.1']);
    // 974 rows sent in 10 batches: each split of a batch the engine fails on is two requests more.
    const expected = Array.from({ length: 1_000 }, (_, i) => i).filter((i) => isBad(i) || refused(i));
    expect(errors.map((e) => [e.row, e.title])).toEqual(expected.map((i) => [i + 1, isBad(i) ? 'Malformed row' : 'MLEngineException']));
    expect(manifest.counts).toMatchObject({ rowsIn: 1_000, rowsQuarantined: expected.length, requests: 10 + 2 * manifest.counts!.splits });
  });
});
