import { gzipSync, gunzipSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli } from '../helpers/cli.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { expectedRental, parseCsv, startSimulator, tempDir } from '../helpers/scoring.js';

const PARTS = 20;
const ROWS_PER_PART = 750;
const MODEL = 'mindsdb/home_rentals_model';
let sim: Simulator;
let s3: S3Server;
let storage: Storage;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let env: Record<string, string>;

/** Part p's CSV: the header, then its slice of the rows of the one concatenated file. */
function partCsv(p: number): string {
  let text = csvLine(RENTAL_COLUMNS);
  for (let i = p * ROWS_PER_PART; i < (p + 1) * ROWS_PER_PART; i++) text += csvLine(rentalRow(i));
  return text;
}
const partName = (p: number) => `part-${String(p).padStart(5, '0')}.csv.gz`;

beforeAll(async () => {
  sim = await startSimulator();
  s3 = await startS3Server(['data', 'results']);
  storage = createStorage(s3.settings);
  tmp = await tempDir();
  env = { MODEL_SERVICE_URL: sim.url, ...s3.env };
  // Spark leaves such files beside its parts: never data.
  await storage.write(parseLocation('s3://data/exports/2026-11-21/_SUCCESS'), '');
  for (let p = 0; p < PARTS; p++) await storage.write(parseLocation(`s3://data/exports/2026-11-21/${partName(p)}`), gzipSync(partCsv(p)));
  let all = csvLine(RENTAL_COLUMNS);
  for (let i = 0; i < PARTS * ROWS_PER_PART; i++) all += csvLine(rentalRow(i));
  await writeFile(join(tmp.dir, 'all.csv'), all);
});
afterAll(async () => {
  storage.close();
  await Promise.all([sim.close(), s3.close(), tmp.cleanup()]);
});

const readS3 = async (loc: string) => {
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.read(parseLocation(loc))) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};
const score = (args: string[]) => runCli(['score', ...args, '--model', MODEL], env);

describe('an input of many files is one run', () => {
  it('scores 20 gzipped parts under an S3 prefix into one output equal, row for row, to the concatenated file scored alone', async () => {
    const prefix = await score(['s3://data/exports/2026-11-21/', '--out', 's3://results/runs', '--run-id', 'prefix', '--segment-rows', '1000', '--json']);
    expect(prefix.stderr).not.toContain('S3RVER');
    expect(prefix.code).toBe(0);
    const alone = await score([join(tmp.dir, 'all.csv'), '--out', join(tmp.dir, 'runs'), '--run-id', 'alone', '--json']);
    expect(alone.code).toBe(0);

    // gzip by default, since every input was gzipped; the same bytes once inflated.
    const gz = await readS3('s3://results/runs/prefix/predictions.csv.gz');
    const fromParts = gunzipSync(gz).toString('utf8');
    const fromOne = await readFile(join(tmp.dir, 'runs', 'alone', 'predictions.csv'), 'utf8');
    expect(fromParts).toBe(fromOne);
    const rows = parseCsv(fromParts);
    expect(rows).toHaveLength(PARTS * ROWS_PER_PART);
    rows.forEach((r, i) => {
      expect(r.listing_id).toBe(`L${String(i).padStart(8, '0')}`);
      expect(Number(r.rental_price)).toBe(expectedRental(r).rental_price);
    });

    const manifest = JSON.parse((await readS3('s3://results/runs/prefix/manifest.json')).toString()) as {
      input: Record<string, unknown>;
      inputs: { location: string; etag: string; sha256: string; rows: number; gzip: boolean }[];
      outputs: { file: string; rows: number }[];
      counts: { segments: number };
    };
    expect(manifest.input).toMatchObject({ location: 's3://data/exports/2026-11-21/', rows: PARTS * ROWS_PER_PART, gzip: true });
    expect(manifest.inputs.map((i) => i.location)).toEqual(Array.from({ length: PARTS }, (_, p) => `s3://data/exports/2026-11-21/${partName(p)}`));
    for (const [p, input] of manifest.inputs.entries()) {
      expect(input).toMatchObject({ rows: ROWS_PER_PART, gzip: true });
      expect(input.etag).toBeTruthy();
      expect(input.sha256).toBe(createHashOf(gzipSync(partCsv(p))));
    }
    // Segments never cross files: each part of 750 rows is one segment.
    expect(manifest.counts.segments).toBe(PARTS);
    expect(manifest.outputs.map((o) => o.file)).toEqual(['predictions.csv.gz', 'errors.jsonl']);
  });

  it('--output-per-file writes one output per input, named after it, with the rows of that input', async () => {
    const result = await score([
      's3://data/exports/2026-11-21/part-*.csv.gz',
      '--out',
      's3://results/runs',
      '--run-id',
      'per-file',
      '--output-per-file',
      '--compress',
      'none',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const names = [];
    for await (const f of storage.list(parseLocation('s3://results/runs/per-file/predictions/'))) names.push(f.location.kind === 's3' ? f.location.key : '');
    expect(names).toEqual(Array.from({ length: PARTS }, (_, p) => `runs/per-file/predictions/part-${String(p).padStart(5, '0')}.csv`));
    for (const p of [0, 7, 19]) {
      const rows = parseCsv((await readS3(`s3://results/runs/per-file/predictions/part-${String(p).padStart(5, '0')}.csv`)).toString());
      expect(rows.map((r) => r.listing_id)).toEqual(Array.from({ length: ROWS_PER_PART }, (_, i) => `L${String(p * ROWS_PER_PART + i).padStart(8, '0')}`));
    }
  });

  it('a glob that matches nothing, and files of other columns, are clear errors', async () => {
    const none = await score(['s3://data/exports/2026-11-21/part-*.jsonl', '--out', 's3://results/runs']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('s3://data/exports/2026-11-21/part-*.jsonl: no file matches the glob');
    expect(none.stderr).toContain('[E_INPUT_NOT_FOUND]');

    const folder = join(tmp.dir, 'mixed');
    await mkdir(folder);
    await writeFile(join(folder, 'a.csv'), partCsv(0));
    await writeFile(join(folder, 'b.csv'), 'listing_id,sqft\nL1,500\n');
    const mixed = await score([folder, '--out', join(tmp.dir, 'runs')]);
    expect(mixed.code).toBe(1);
    expect(mixed.stderr).toContain(`${join(folder, 'b.csv')} lacks`);
    expect(mixed.stderr).toContain('the files of one run must have the same columns');
  });
});

function createHashOf(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
