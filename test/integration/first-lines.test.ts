import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstLines } from '../../src/http/run-page-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import { tempDir } from '../helpers/scoring.js';

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => (tmp = await tempDir()));
afterAll(() => tmp.cleanup());

describe('firstLines', () => {
  it('keeps a character whose UTF-8 bytes straddle two chunks of the read stream', async () => {
    // A local file is read in chunks of 64 KiB: the two bytes of "é" land in the first and second.
    const line = `${'a'.repeat(64 * 1024 - 1)}é`;
    const path = join(tmp.dir, 'errors.jsonl');
    await writeFile(path, `${line}\nsecond\nthird\n`);
    const storage = createStorage();
    try {
      expect(await firstLines(storage, parseLocation(path), 2)).toEqual([line, 'second']);
      expect(await firstLines(storage, parseLocation(join(tmp.dir, 'missing.jsonl')), 2)).toBeUndefined();
    } finally {
      storage.close();
    }
  });
});
