import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import { parseRunOptions } from '../../src/config/run-options.js';
import { BatchScorerError } from '../../src/errors.js';
import { createParquetOutput } from '../../src/formats/parquet-output.js';
import { planInput } from '../../src/scoring/plan.js';
import { minimumSegmentRows, segmentsOf } from '../../src/scoring/segment-bound.js';
import { checkSegments } from '../../src/scoring/segment-check.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { rejection } from '../helpers/rejection.js';
import { tempDir } from '../helpers/scoring.js';

describe('the smallest segmentRows for MAX_SEGMENTS', () => {
  it('is the first segmentRows at which the files make no more segments than the bound', () => {
    expect(minimumSegmentRows([100_000], 10_000)).toBe(10);
    expect(segmentsOf([100_000], 9)).toBe(11_112);
    // Each file starts a segment of its own.
    expect(minimumSegmentRows([10, 1], 2)).toBe(10);
    expect(minimumSegmentRows([10, 1], 3)).toBe(5);
    expect(minimumSegmentRows([0, 0, 7], 1)).toBe(7);
    // More files with rows than the bound: none fits.
    expect(minimumSegmentRows([5, 5, 5], 2)).toBeUndefined();
    // Against a search of every segmentRows, on inputs of a few files.
    let seed = 7;
    const next = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    for (let trial = 0; trial < 300; trial++) {
      const rows = Array.from({ length: 1 + next(4) }, () => next(500));
      const max = 1 + next(40);
      const fits = Array.from({ length: 600 }, (_, i) => i + 1).find((s) => segmentsOf(rows, s) <= max);
      expect([rows, max, minimumSegmentRows(rows, max)]).toEqual([rows, max, fits]);
    }
  });
});

/** Local storage whose reads are counted (listing is not a read). */
function countedReads(): { storage: Storage; reads: () => number } {
  const storage = createStorage();
  let reads = 0;
  return {
    storage: {
      ...storage,
      read: (loc, options) => {
        reads++;
        return storage.read(loc, options);
      },
    },
    reads: () => reads,
  };
}

describe('checkSegments and planning against MAX_SEGMENTS', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let csv: string;
  let gz: string;
  beforeAll(async () => {
    tmp = await tempDir();
    csv = join(tmp.dir, 'rows.csv');
    gz = join(tmp.dir, 'rows.csv.gz');
    const text = `a,b\n${Array.from({ length: 1000 }, (_, i) => `${i},x`).join('\n')}\n`;
    await writeFile(csv, text);
    await writeFile(gz, gzipSync(text));
  });
  afterAll(() => tmp.cleanup());
  const options = (segmentRows: number) => parseRunOptions({ segmentRows }, 'options');
  const limits = { ...DEFAULT_LIMITS, segments: 10 };

  it('decides by bytes alone, reading nothing, when the files cannot hold too many rows', async () => {
    const { storage, reads } = countedReads();
    // 5,894 bytes hold 2,947 rows at most: 8 segments of 400.
    expect(await checkSegments(storage, parseLocation(csv), options(400), limits)).toEqual({ fits: true });
    // A .gz may inflate to 64 MiB whatever its size: 32 Mi rows at most.
    expect(await checkSegments(storage, parseLocation(gz), options(4_000_000), limits)).toEqual({ fits: true });
    expect(reads()).toBe(0);
  });

  it('counts the rows otherwise: refuses naming the smallest segmentRows, or finds they fit', async () => {
    const { storage, reads } = countedReads();
    for (const input of [csv, gz]) {
      const refused = await rejection(checkSegments(storage, parseLocation(input), options(1), limits), BatchScorerError);
      expect(refused.code).toBe('E_LIMIT');
      expect(refused.message).toMatch(
        /its 1,000 rows make 1,000 segments of --segment-rows 1, past MAX_SEGMENTS \(10\): choose a --segment-rows \(segmentRows\) of 100 or more/,
      );
    }
    expect(await checkSegments(storage, parseLocation(csv), options(100), limits)).toEqual({ fits: true });
    // Planned (stopping at the bound), then counted, for each refusal; planned once for the fit;
    // and the CSV's lines sampled first, twice (its sample does not put it far below the bound).
    expect(reads()).toBe(7);
  });

  it('names the least segmentRows planning could tell when the budget left does not let the rows be counted', async () => {
    const big = join(tmp.dir, 'big.csv');
    await writeFile(big, `a,b\n${Array.from({ length: 20_000 }, (_, i) => `${i},x`).join('\n')}\n`);
    // Local files are read 64 KiB at a time: planning stops within the first, counting needs them all.
    const refused = await rejection(checkSegments(createStorage(), parseLocation(big), options(1), { ...limits, dryRunBytes: 100 * 1024 }), BatchScorerError);
    expect(refused.message).toMatch(
      /its first 11 rows already make more than 10 segments of --segment-rows 1, .*of at least 2 \(more if the input has many more rows\)/,
    );
  });

  it('leaves it undecided past the dry-run bounds, or for an input it cannot read', async () => {
    const storage = createStorage();
    const small = { ...limits, dryRunBytes: 1024 };
    expect(await checkSegments(storage, parseLocation(csv), options(1), small)).toEqual({
      fits: false,
      undecided: expect.stringMatching(/passes MAX_DRY_RUN_BYTES \(1 KiB\)/) as string,
    });
    expect(await checkSegments(storage, parseLocation(join(tmp.dir, 'missing.csv')), options(1), limits)).toMatchObject({ fits: false });
  });

  it('planning stops at the first segment past the bound, naming the least segmentRows the rows read ask for', async () => {
    const storage = createStorage();
    const planned = planInput(storage, parseLocation(csv), { segmentRows: 7, limits: { ...DEFAULT_LIMITS, segments: 10 }, quote: '"', encoding: 'utf-8' });
    const refused = await rejection(planned, BatchScorerError);
    expect(refused.code).toBe('E_LIMIT');
    expect(refused.message).toMatch(
      /its first 71 rows already make more than 10 segments of --segment-rows 7, past MAX_SEGMENTS \(10\): choose a --segment-rows \(segmentRows\) of at least 8/,
    );
    // At the bound exactly, it plans.
    expect(
      (await planInput(storage, parseLocation(csv), { segmentRows: 100, limits: { ...DEFAULT_LIMITS, segments: 10 }, quote: '"', encoding: 'utf-8' })).segments,
    ).toHaveLength(10);
  });

  it('decides a Parquet input by its row groups, never split', async () => {
    const write = async (name: string, rows: number, rowGroupRows: number) => {
      const path = join(tmp.dir, name);
      const output = createParquetOutput(createWriteStream(path), [{ name: 'a', type: 'int64' }], { rowGroupRows });
      await output.writeRows(Array.from({ length: rows }, (_, i) => [i]));
      await output.end();
      return parseLocation(path);
    };
    const storage = createStorage();
    // 1,000 rows in one row group: one segment, whatever segmentRows.
    expect(await checkSegments(storage, await write('one-group.parquet', 1000, 1000), options(1), limits)).toEqual({ fits: true });
    // 30 row groups of one row: 30 segments at 1, 10 at 3.
    const groups = await write('groups.parquet', 30, 1);
    const refused = await rejection(checkSegments(storage, groups, options(1), limits), BatchScorerError);
    expect(refused.message).toMatch(/its first 11 rows already make more than 10 segments of --segment-rows 1, .*of at least 2 /);
    expect(await checkSegments(storage, groups, options(3), limits)).toEqual({ fits: true });
  });
});
