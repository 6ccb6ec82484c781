import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { concatenateParts } from '../../src/pipeline/assemble.js';
import { planInput } from '../../src/pipeline/plan.js';
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
