import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunOptions, type RunOptionsInput } from '../../src/config/run-options.js';
import { silentLogger } from '../../src/log.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import { parseLocation } from '../../src/storage/location.js';
import { fakeService, type FakeServiceOptions } from '../helpers/fake-predictor.js';
import { MemoryStorage } from '../helpers/memory-storage.js';
import { runFolder, score, startSimulator, tempDir, writeRentalsWithEngineErrors } from '../helpers/scoring.js';

const ROWS = 1_500;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  // Some rows the engine fails on, so that errors.jsonl is compared too.
  await writeRentalsWithEngineErrors(input, ROWS, (i) => i % 500 === 11);
});
afterAll(() => tmp.cleanup());

const servers: Array<[string, FakeServiceOptions]> = [
  ['the reference server', {}],
  ['the interface document (bare array, __service_row_id)', { envelope: 'array', rowIdMember: '__service_row_id' }],
];

/**
 * The fast tests of score-run-in-memory.test.ts trust the fake service and the memory storage:
 * here the same run through the simulator over HTTP and the local disk proves they stand for them.
 */
describe.each(servers)('the in-memory run and the run through the simulator and the disk, for %s', (_, server) => {
  it('write the same bytes and count the same', async () => {
    const options: RunOptionsInput = { segmentRows: 400, batchSize: 64, maxErrorRate: 0.05, envelope: server.envelope };
    const sim = await startSimulator(server);
    const out = join(tmp.dir, `out-${server.rowIdMember ?? 'default'}`);
    try {
      const real = await score(input, out, { ...options, service: sim.url, runId: 'disk' });

      const storage = new MemoryStorage();
      await storage.write(parseLocation('/memory/in/rentals.csv'), await readFile(input));
      const memory = await scoreRun(
        { input: '/memory/in/rentals.csv', out: '/memory/out', model: 'mindsdb/home_rentals_model', options: parseRunOptions({ ...options, runId: 'memory' }) },
        { storage, log: silentLogger, predictorFor: fakeService(server).predictorFor },
      );

      const disk = await runFolder(out, 'disk');
      for (const file of ['predictions.csv', 'errors.jsonl']) {
        expect(await storage.readText(parseLocation(`/memory/out/memory/${file}`)), file).toBe(disk[file]);
      }
      expect(disk['errors.jsonl'].trim().split('\n')).toHaveLength(3);
      expect(memory.model).toEqual(real.model);
      expect({ ...memory.counts, connectionsOpened: 0 }).toEqual({ ...real.counts, connectionsOpened: 0 });
      expect(memory.profile).toEqual(real.profile);
      expect(memory.warnings).toEqual(real.warnings);
    } finally {
      await sim.close();
    }
  });
});
