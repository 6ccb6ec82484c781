import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { parseCsv, rentalsText, tempDir } from '../helpers/scoring.js';
import { connectMindsdb } from './mindsdb-server.js';
import { sqlPredictions } from './sql-predictions.js';

const conn = connectMindsdb(inject('mindsdbUrl'));
const ROWS = 3_000;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let csv: string;

beforeAll(async () => {
  tmp = await tempDir();
  csv = rentalsText(ROWS);
  await writeFile(join(tmp.dir, 'rentals.csv'), csv);
});
afterAll(() => tmp.cleanup());

describe('score against a real MindsDB', () => {
  it('scores a CSV and every value equals the server’s own SQL batch prediction for that row', async () => {
    const out = join(tmp.dir, 'out-csv');
    const res = await runCli([
      'score',
      join(tmp.dir, 'rentals.csv'),
      '--model',
      'mindsdb/home_rentals_model',
      '--out',
      out,
      '--service',
      conn.url,
      '--run-id',
      'csv',
      '--json',
    ]);
    expect(res.code, res.stderr).toBe(0);
    const scored = parseCsv(await readFile(join(out, 'csv', 'predictions.csv'), 'utf8'));
    expect(scored).toHaveLength(ROWS);
    const server = await sqlPredictions(conn, 'home_rentals_model', csv, 'listing_id');
    expect(server.size).toBe(ROWS);
    for (const row of scored) {
      const truth = server.get(row.listing_id)!;
      expect([
        row.listing_id,
        Number(row.rental_price),
        Number(row.rental_price_min),
        Number(row.rental_price_max),
        Number(row.rental_price_confidence),
      ]).toEqual([row.listing_id, truth.rental_price, truth.rental_price_min, truth.rental_price_max, truth.rental_price_confidence]);
    }
  });
});
