import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, INFLATION_FLOOR_BYTES, type Limits } from '../../src/config/limits.js';
import { BatchScorerError } from '../../src/errors.js';
import { inflationCap } from '../../src/scoring/input-bounds.js';
import { gunzip } from '../../src/scoring/input-bytes.js';

const MiB = 1024 * 1024;

/** Inflates `gz` through gunzip with the cap of `limits`; answers the bytes it gave, and its error if it stopped. */
async function inflate(gz: Buffer, limits: Limits): Promise<{ bytes: number; error?: unknown }> {
  let bytes = 0;
  try {
    for await (const chunk of gunzip(Readable.from([gz]), 'bomb.csv.gz', inflationCap(limits, gz.length, 'bomb.csv.gz'))) bytes += chunk.length;
    return { bytes };
  } catch (error) {
    return { bytes, error };
  }
}

/** `size` bytes of one repeated row: about a thousand times smaller gzipped. */
const repeated = (size: number) => gzipSync(Buffer.alloc(size, '1,2\n'), { level: 9 });

describe('the inflation cap', () => {
  it('refuses a file inflating past MAX_INFLATION_RATIO times its bytes, having inflated no more than a chunk past it', async () => {
    const gz = repeated(96 * MiB);
    const { bytes, error } = await inflate(gz, { ...DEFAULT_LIMITS, inflationRatio: 200 });
    expect(error).toBeInstanceOf(BatchScorerError);
    expect((error as BatchScorerError).code).toBe('E_LIMIT');
    expect((error as Error).message).toMatch(
      /^bomb\.csv\.gz: inflating [\d,]+ bytes to more than 67,108,864 \(\d+ times as many\) passes MAX_INFLATION_RATIO \(200\): raise MAX_INFLATION_RATIO/,
    );
    // 200 times ~100 KB is below the floor: the floor is where it stopped.
    expect(bytes).toBeLessThanOrEqual(INFLATION_FLOOR_BYTES);
    expect(bytes).toBeGreaterThan(INFLATION_FLOOR_BYTES - MiB);
  });

  it('never refuses a file for its ratio below the floor, however far it inflates', async () => {
    const gz = repeated(INFLATION_FLOOR_BYTES);
    expect(INFLATION_FLOOR_BYTES / gz.length).toBeGreaterThan(500);
    expect(await inflate(gz, { ...DEFAULT_LIMITS, inflationRatio: 1 })).toEqual({ bytes: INFLATION_FLOOR_BYTES });
  });

  it('refuses past MAX_INFLATED_BYTES when it is the smaller bound, naming it', async () => {
    const { bytes, error } = await inflate(repeated(8 * MiB), { ...DEFAULT_LIMITS, inflatedBytes: 4 * MiB });
    expect((error as Error).message).toMatch(/^bomb\.csv\.gz: inflating it to more than 4,194,304 bytes passes MAX_INFLATED_BYTES \(4 MiB\)/);
    expect(bytes).toBeLessThanOrEqual(4 * MiB);
  });

  it('takes the ratio against the whole file, above the floor, and the smaller of the two bounds', () => {
    const limits = { ...DEFAULT_LIMITS, inflationRatio: 200, inflatedBytes: 64 * 1024 * MiB };
    expect(inflationCap(limits, 10 * MiB, 'f').bytes).toBe(2000 * MiB);
    expect(inflationCap(limits, 100, 'f').bytes).toBe(INFLATION_FLOOR_BYTES);
    expect(inflationCap({ ...limits, inflatedBytes: 1024 * MiB }, 10 * MiB, 'f').bytes).toBe(1024 * MiB);
  });
});
