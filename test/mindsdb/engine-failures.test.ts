import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { parseCsv, parseJsonLines, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { predictExchanges, useRecordingProxy } from './recording-proxy.js';
import { scoreCli } from './score-cli.js';
import { expectSqlPredictions, sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 2_000;
/** Rows whose sqft is "lots", which the engine refuses: 5 of 2,000, within the default --max-error-rate. */
const bad = (i: number) => i % 400 === 123;
const SQFT = RENTAL_COLUMNS.indexOf('sqft');
/** The engine failure's own line, which is all errors.jsonl and messages keep of the server's detail. */
const REFUSAL = "[scorer_byom/home_rentals_model]: ValueError: row 0: column 'sqft' is not a number";
let tmp: Awaited<ReturnType<typeof tempDir>>;
const proxy = useRecordingProxy(conn.url);

/** A rentals CSV of the rows `keep` holds for, with "lots" for the sqft of the `bad` ones. */
function rentals(rows: number, keep: (i: number) => boolean = () => true): string {
  const lines = [csvLine(RENTAL_COLUMNS)];
  for (let i = 0; i < rows; i++) {
    if (!keep(i)) continue;
    const fields = rentalRow(i);
    if (bad(i)) fields[SQFT] = 'lots';
    lines.push(csvLine(fields));
  }
  return lines.join('');
}

const score = (input: string, runId: string, service: string) =>
  scoreCli({ input: join(tmp.dir, input), model: 'mindsdb/home_rentals_model', service, out: join(tmp.dir, 'out'), runId });

beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

describe('rows the real MindsDB engine refuses', () => {
  it('quarantines them with the failure’s own line, not the server’s traceback, and scores the rest as SQL does', async () => {
    await writeFile(join(tmp.dir, 'rentals.csv'), rentals(ROWS));
    const before = proxy.exchanges.length;
    const res = await score('rentals.csv', 'lots', proxy.url);
    expect(res.code, res.stderr).toBe(0);
    expect(existsSync(join(res.folder, '_SUCCESS'))).toBe(true);
    const badRows = Array.from({ length: ROWS }, (_, i) => i).filter(bad);

    // What the server sent: each refusal a 500 whose detail carries a Python traceback of about 2 KB (and again in its message).
    const predicts = predictExchanges(proxy.exchanges.slice(before));
    const refusals = proxy.exchanges.slice(before).filter((e) => e.status === 500);
    expect(refusals.length).toBeGreaterThan(badRows.length);
    for (const e of refusals) {
      const body = JSON.parse(e.answer.toString('utf8')) as { title: string; detail: string };
      expect(body.title).toBe('MLEngineException');
      // The row is counted within the request: halves of a batch name other places.
      expect(body.detail).toMatch(
        /^\[scorer_byom\/home_rentals_model\]: ValueError: row \d+: column 'sqft' is not a number\nTraceback \(most recent call last\):\n/,
      );
      expect(Buffer.byteLength(body.detail)).toBeGreaterThan(1_500);
    }
    // Halved until each refused row was sent alone, and refused alone.
    for (const id of badRows) {
      expect(predicts.some((p) => p.sent.length === 1 && p.sent[0].__mindsdb_row_id === id && p.status === 500)).toBe(true);
    }

    const quarantined = parseJsonLines(await readFile(join(res.folder, 'errors.jsonl'), 'utf8'));
    expect(quarantined.map((q) => [q.row, (q.input as Record<string, string>).sqft, q.status, q.title, q.detail])).toEqual(
      badRows.map((i) => [i + 1, 'lots', 500, 'MLEngineException', REFUSAL]),
    );
    expect(res.stderr).not.toContain('Traceback');
    const manifest = JSON.parse(await readFile(join(res.folder, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS - badRows.length, rowsQuarantined: badRows.length });

    const scored = parseCsv(await readFile(join(res.folder, 'predictions.csv'), 'utf8'));
    const truth = await sqlPredictions(
      conn,
      'home_rentals_model',
      rentals(ROWS, (i) => !bad(i)),
      'listing_id',
    );
    expectSqlPredictions(scored, truth, 'listing_id');
  });

  it('fails a file whose first rows all fail, saying the failure’s own line, exit 1', async () => {
    await writeFile(
      join(tmp.dir, 'all-lots.csv'),
      rentalsText(20, (row) => {
        row.sqft = 'lots';
      }),
    );
    const res = await score('all-lots.csv', 'all-lots', conn.url);
    expect(res.code, res.stderr).toBe(1);
    expect(existsSync(join(res.folder, '_SUCCESS'))).toBe(false);
    expect(res.stderr).toContain(
      `batch-scorer: run all-lots failed: ${join(tmp.dir, 'all-lots.csv')}: the model failed on each of the first rows; the last said: ` +
        `predict ${conn.url}/api/projects/mindsdb/models/home_rentals_model.2/predict: HTTP 500 MLEngineException: ${REFUSAL} [E_INPUT]`,
    );
    expect(res.stderr).not.toContain('Traceback');
  });
});
