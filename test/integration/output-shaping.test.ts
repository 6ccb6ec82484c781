import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { RENTAL_COLUMNS } from '../../src/simulator/sample-data.js';
import { runCli } from '../helpers/cli.js';
import { expectedRental, parseCsv, parseJsonLines, startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const ROWS = 1000;
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
let out: string;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  out = join(tmp.dir, 'runs');
  await writeRentals(input, ROWS);
});
afterAll(async () => {
  await Promise.all([sim.close(), tmp.cleanup()]);
});

/** Scores the rentals file with the flags given into run `runId`; answers the CLI's result. */
const score = (runId: string, ...flags: string[]) =>
  runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', runId, '--segment-rows', '250', ...flags], {
    MODEL_SERVICE_URL: sim.url,
  });
const file = (runId: string, name: string) => readFile(join(out, runId, name));
const manifestOf = async (runId: string) => JSON.parse((await file(runId, 'manifest.json')).toString()) as Manifest;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('output shaping', () => {
  it('--keep-columns and --drop-columns choose the input columns, in input order; --row-number comes first', async () => {
    expect((await score('keep', '--keep-columns', 'sqft,listing_id', '--row-number')).code).toBe(0);
    const kept = parseCsv((await file('keep', 'predictions.csv')).toString());
    expect(Object.keys(kept[0])).toEqual([
      'row_number',
      'listing_id',
      'sqft',
      'rental_price',
      'rental_price_confidence',
      'rental_price_min',
      'rental_price_max',
      'rental_price_anomaly',
    ]);
    expect(kept.map((r) => r.row_number)).toEqual(Array.from({ length: ROWS }, (_, i) => String(i + 1)));

    expect((await score('drop', '--drop-columns', 'notes', '--drop-columns', 'neighborhood')).code).toBe(0);
    const dropped = parseCsv((await file('drop', 'predictions.csv')).toString());
    expect(Object.keys(dropped[0]).slice(0, RENTAL_COLUMNS.length - 2)).toEqual(RENTAL_COLUMNS.filter((c) => c !== 'notes' && c !== 'neighborhood'));
    // Dropped from the output, still sent: the predictions are the model's for the whole row.
    const all = parseCsv((await readFile(input)).toString());
    dropped.forEach((r, i) => expect(Number(r.rental_price)).toBe(expectedRental(all[i]).rental_price));
  });

  it('an unknown column is a usage error naming the columns that exist, before anything is scored', async () => {
    const result = await score('unknown', '--keep-columns', 'listing_id,sqfeet');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--keep-columns: ${input} has no column(s) sqfeet; its columns are ${RENTAL_COLUMNS.join(', ')}`);
    expect(existsSync(join(out, 'unknown'))).toBe(false);
    const member = await score('member', '--prediction-columns', 'value,probability');
    expect(member.code).toBe(2);
    expect(member.stderr).toContain('--prediction-columns');
  });

  it('--prediction-columns chooses the members written, in their fixed order; JSON Lines too', async () => {
    expect((await score('members', '--prediction-columns', 'interval,value', '--keep-columns', 'listing_id', '--format', 'jsonl', '--row-number')).code).toBe(
      0,
    );
    const rows = parseJsonLines((await file('members', 'predictions.jsonl')).toString());
    expect(rows).toHaveLength(ROWS);
    expect(Object.keys(rows[0])).toEqual(['row_number', 'listing_id', 'rental_price', 'rental_price_min', 'rental_price_max']);
    expect(rows[10]).toMatchObject({ row_number: 11, listing_id: 'L00000010' });
  });

  it('--max-rows-per-file cuts the output into numbered shards, each in the manifest, byte-identical at any concurrency', async () => {
    expect((await score('shards', '--max-rows-per-file', '300', '--concurrency', '1', '--batch-size', '70')).code).toBe(0);
    expect((await score('shards-again', '--max-rows-per-file', '300', '--concurrency', '8', '--batch-size', '70', '--segments-at-once', '4')).code).toBe(0);
    const names = ['predictions-00000.csv', 'predictions-00001.csv', 'predictions-00002.csv', 'predictions-00003.csv'];
    expect((await readdir(join(out, 'shards'))).filter((n) => n.startsWith('predictions')).sort()).toEqual(names);
    const manifest = await manifestOf('shards');
    expect(manifest.outputs.map((o) => [o.file, o.rows])).toEqual([...names.map((n, i) => [n, i < 3 ? 300 : 100]), ['errors.jsonl', 0]]);
    let ids: string[] = [];
    for (const [i, name] of names.entries()) {
      const bytes = await file('shards', name);
      expect(manifest.outputs[i]).toMatchObject({ bytes: bytes.length, sha256: sha256(bytes) });
      expect(bytes.equals(await file('shards-again', name))).toBe(true);
      const rows = parseCsv(bytes.toString());
      expect(Object.keys(rows[0])[0]).toBe('listing_id');
      ids = [...ids, ...rows.map((r) => r.listing_id)];
    }
    expect(ids).toEqual(Array.from({ length: ROWS }, (_, i) => `L${String(i).padStart(8, '0')}`));
  });

  it('an output of one column keeps its empty values as rows, in shards too', async () => {
    const flags = ['--drop-columns', RENTAL_COLUMNS.join(','), '--prediction-columns', 'anomaly', '--max-rows-per-file', '300'];
    expect((await score('one-column', ...flags)).code).toBe(0);
    const manifest = await manifestOf('one-column');
    expect(manifest.outputs.map((o) => o.rows)).toEqual([300, 300, 300, 100, 0]);
    const first = (await file('one-column', 'predictions-00000.csv')).toString();
    // The simulator answers no anomaly: each row is an empty value, written quoted.
    expect(first).toBe(`rental_price_anomaly\n${'""\n'.repeat(300)}`);
  });

  it('--compress gzip writes gzipped outputs and shards, hashed as stored, the same rows as uncompressed', async () => {
    expect((await score('plain')).code).toBe(0);
    expect((await score('gz', '--compress', 'gzip')).code).toBe(0);
    const gz = await file('gz', 'predictions.csv.gz');
    expect(gunzipSync(gz).equals(await file('plain', 'predictions.csv'))).toBe(true);
    expect((await manifestOf('gz')).outputs[0]).toMatchObject({ file: 'predictions.csv.gz', rows: ROWS, bytes: gz.length, sha256: sha256(gz) });

    expect((await score('gz-shards', '--compress', 'gzip', '--max-rows-per-file', '600')).code).toBe(0);
    const first = gunzipSync(await file('gz-shards', 'predictions-00000.csv.gz')).toString();
    const second = gunzipSync(await file('gz-shards', 'predictions-00001.csv.gz')).toString();
    expect(parseCsv(first)).toHaveLength(600);
    expect(parseCsv(second)).toHaveLength(400);
  });
});
