import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatenateParts } from '../../src/scoring/assemble.js';
import { planInput } from '../../src/scoring/plan.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { tempDir } from '../helpers/scoring.js';

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  tmp = await tempDir();
  // A file where a folder would have to be made: every write below it fails.
  await writeFile(join(tmp.dir, 'blocker'), '');
});
afterAll(() => tmp.cleanup());

describe('staged copies', () => {
  it('a gzipped file is staged inflated as it is planned, and its segments are byte ranges of the copy', async () => {
    const text = `a,b\n${Array.from({ length: 5000 }, (_, i) => `${i},"x\ny ${i}"\n`).join('')}`;
    const input = join(tmp.dir, 'rows.csv.gz');
    await writeFile(input, gzipSync(text));
    const staged = join(tmp.dir, 'staged', '00000.txt');
    const plan = await planInput(createStorage(), parseLocation(input), {
      segmentRows: 1000,
      quote: '"',
      encoding: 'utf-8',
      stage: () => parseLocation(staged),
    });
    expect(plan.files[0]).toMatchObject({ gzip: true, rows: 5000, staged: { location: parseLocation(staged) } });
    const copy = await readFile(staged, 'utf8');
    expect(copy).toBe(text);
    expect(plan.segments).toHaveLength(5);
    // Each segment starts at a row of the copy (ASCII: bytes are characters): row 1000 * k, whose text is known.
    for (const [k, segment] of plan.segments.entries()) expect(copy.slice(segment.start)).toMatch(new RegExp(`^${1000 * k},"x\ny ${1000 * k}"\n`));
  });
});

describe('a write that storage refuses fails the step, never hangs it', () => {
  it('an output file, past the stream buffer', async () => {
    const part = join(tmp.dir, 'part.csv');
    await writeFile(part, 'x'.repeat(1024 * 1024));
    const storage = createStorage();
    const target = parseLocation(join(tmp.dir, 'blocker', 'runs', 'predictions.csv'));
    await expect(concatenateParts(storage, target, [parseLocation(part)])).rejects.toThrow(/blocker/);
  });

  it('a staged copy of a file in another encoding, past the stream buffer', async () => {
    const input = join(tmp.dir, 'latin1.csv');
    await writeFile(input, Buffer.from(`a,b\n${'1,caf\xe9\n'.repeat(20_000)}`, 'latin1'));
    const storage = createStorage();
    const planning = planInput(storage, parseLocation(input), {
      segmentRows: 1000,
      quote: '"',
      encoding: 'latin1',
      stage: () => parseLocation(join(tmp.dir, 'blocker', 'inputs', '00000.txt')),
    });
    await expect(planning).rejects.toThrow(/blocker/);
  });
});
