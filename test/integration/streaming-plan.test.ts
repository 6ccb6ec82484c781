import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunOptions } from '../../src/config/run-options.js';
import { BatchScorerError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import type { Simulator } from '../../src/simulator/server.js';
import type { Location } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { ReadOptions, Storage } from '../../src/storage/storage-types.js';
import { waitFor } from '../helpers/queue.js';
import { rejection } from '../helpers/rejection.js';
import { score, startSimulator, useRentalsInput } from '../helpers/scoring.js';
import { serviceClientFactory } from '../../src/app/service-clients.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';

// Planning a CSV goes on while its first segments are scored (see startRun). To see that without
// timing luck, planning's read of the input is held after its first bytes until the test lets it
// go: a run that waited for its whole plan would send no request meanwhile.
const ROWS = 6_000;
const SEGMENT_ROWS = 500;
/** Bytes planning reads before it is held: a few segments' worth of rentals rows (~55 bytes each). */
const HELD_AT = 200_000;

/**
 * Real local storage whose whole-file reads of `name` (planning's; segments read ranges) stop
 * after `at` bytes until `release` resolves.
 */
function heldStorage(name: string, at: number, release: () => Promise<unknown>): Storage {
  const storage = createStorage();
  async function* held(stream: Readable, signal?: AbortSignal): AsyncGenerator<Buffer> {
    let passed = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (passed < at && passed + chunk.length >= at) {
        yield chunk.subarray(0, at - passed);
        // Held, it still stops as a read does when the run is cancelled.
        await Promise.race([release(), ...(signal ? [once(signal, 'abort').then(() => signal.throwIfAborted())] : [])]);
        yield chunk.subarray(at - passed);
      } else yield chunk;
      passed += chunk.length;
    }
  }
  return new Proxy(storage, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (prop !== 'read') return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      return async (loc: Location, options: ReadOptions = {}) => {
        const stream = await target.read(loc, options);
        const whole = options.start === undefined && options.end === undefined;
        return whole && 'path' in loc && loc.path.endsWith(name) ? Readable.from(held(stream, options.signal)) : stream;
      };
    },
  });
}

describe('score while planning', () => {
  const files = useRentalsInput(ROWS);
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterAll(() => sim.close());

  const options = (runId: string, rest: Record<string, unknown> = {}) =>
    parseRunOptions({ service: sim.url, segmentRows: SEGMENT_ROWS, batchSize: 100, concurrency: 4, runId, ...rest });
  const run = (runId: string, storage: Storage, signal?: AbortSignal) =>
    scoreRun(
      { input: files.input, out: join(files.dir, 'out'), model: 'mindsdb/home_rentals_model', options: options(runId) },
      { storage, log: silentLogger, predictorFor: serviceClientFactory(new Map(), DEFAULT_LIMITS), signal },
    );
  const runJson = async (runId: string) =>
    JSON.parse(await readFile(join(files.dir, 'out', runId, '_work', 'run.json'), 'utf8')) as { input: { planning?: true; segments: unknown[] } };

  it('sends its first predict before planning ends, and scores as a run planned first does', async () => {
    const before = sim.stats.predictRequests;
    // The probe, then a segment's request: both while planning is held.
    const scoredWhilePlanning = () => waitFor('a predict request while planning is held', () => sim.stats.predictRequests >= before + 2, 30_000, 10);
    let planningThen: boolean | undefined;
    const storage = heldStorage('rentals.csv', HELD_AT, async () => {
      await scoredWhilePlanning();
      planningThen = (await runJson('held')).input.planning;
    });
    const manifest = await run('held', storage);
    expect(planningThen).toBe(true);
    expect(manifest.counts!.rowsScored).toBe(ROWS);
    expect(manifest.timings!.planEndMs).toBeGreaterThan(manifest.timings!.planMs);
    // run.json ends with the whole plan, as the manifest has it: sha256 and rows of the whole file.
    expect(manifest.inputs[0].sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(manifest.inputs[0].rows).toBe(ROWS);
    const planned = await score(files.input, join(files.dir, 'out'), { service: sim.url, segmentRows: ROWS, batchSize: 100, runId: 'whole' });
    expect(await readFile(join(files.dir, 'out', 'held', 'predictions.csv'))).toEqual(await readFile(join(files.dir, 'out', 'whole', 'predictions.csv')));
    expect(planned.inputs[0].sha256).toBe(manifest.inputs[0].sha256);
  });

  it('resumes a run stopped before its planning ended, keeping its finished segments', async () => {
    const stop = new AbortController();
    const segmentsFolder = join(files.dir, 'out', 'crashed', '_work', 'segments');
    const storage = heldStorage('rentals.csv', HELD_AT, async () => {
      // Stopped once a segment is done, planning still held.
      await waitFor(
        'a segment done while planning is held',
        async () => (await readFile(join(segmentsFolder, '00000.done.json')).catch(() => undefined)) !== undefined,
        30_000,
        10,
      );
      stop.abort();
      await new Promise(() => undefined);
    });
    expect((await rejection(run('crashed', storage, stop.signal), BatchScorerError)).code).toBe('E_ABORTED');
    const stored = await runJson('crashed');
    expect(stored.input.planning).toBe(true);
    const rowsBefore = sim.stats.predictRows;
    const manifest = await run('crashed', createStorage());
    expect(manifest.counts!.rowsScored).toBe(ROWS);
    // Segment 0 was kept, not scored again.
    expect(sim.stats.predictRows - rowsBefore).toBeLessThanOrEqual(ROWS - SEGMENT_ROWS + 1);
    expect((await runJson('crashed').catch(() => undefined))?.input.planning).toBeUndefined();
    expect(await readFile(join(files.dir, 'out', 'crashed', 'predictions.csv'))).toEqual(await readFile(join(files.dir, 'out', 'held', 'predictions.csv')));
  });

  it('refuses to resume a run stopped while planning whose input changed since (E_INPUT_CHANGED)', async () => {
    const stop = new AbortController();
    const storage = heldStorage('rentals.csv', HELD_AT, async () => {
      // Stopped once scoring began (run.json holds the plan so far), planning still held.
      await waitFor('run.json while planning is held', async () => (await runJson('changed').catch(() => undefined))?.input.planning, 30_000, 10);
      stop.abort();
      await new Promise(() => undefined);
    });
    expect((await rejection(run('changed', storage, stop.signal), BatchScorerError)).code).toBe('E_ABORTED');
    expect((await runJson('changed')).input.planning).toBe(true);
    await appendFile(files.input, (await readFile(files.input, 'utf8')).split('\n')[1] + '\n');
    expect((await rejection(run('changed', createStorage()), BatchScorerError)).code).toBe('E_INPUT_CHANGED');
  });
});
