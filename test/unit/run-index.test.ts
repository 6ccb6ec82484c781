import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRunOptions } from '../../src/config/run-options.js';
import { BatchScorerError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { buildManifest } from '../../src/scoring/manifest.js';
import { runFiles } from '../../src/scoring/prepared-run.js';
import { openAttempt } from '../../src/scoring/run-attempt.js';
import { claimRunFolder } from '../../src/scoring/run-folder-claim.js';
import { writeRunFile } from '../../src/scoring/run-file.js';
import { emptyCounts } from '../../src/scoring/segment-counts.js';
import { RunIndex } from '../../src/run-index/index.js';
import { basename, formatLocation, parentLocation, parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';

const root = await mkdtemp(join(tmpdir(), 'run-index-'));
const local = createStorage();
afterAll(async () => {
  local.close();
  await rm(root, { recursive: true, force: true });
});

/** The real local storage, counting its listings and the run files read (by `<run folder>/<file>`) since `taken` was last asked. */
function counted(storage: Storage) {
  const reads: string[] = [];
  let listings = 0;
  const wrapped: Storage = {
    ...storage,
    readText: (loc, signal) => {
      const parent = parentLocation(loc);
      const folder = basename(parent) === '_work' ? parentLocation(parent) : parent;
      reads.push(`${basename(folder)}/${basename(loc)}`);
      return storage.readText(loc, signal);
    },
    list: (prefix, signal) => {
      listings++;
      return storage.list(prefix, signal);
    },
  };
  const taken = () => {
    const seen = { reads: reads.splice(0).sort(), listings };
    listings = 0;
    return seen;
  };
  return { storage: wrapped, taken };
}

const model = 'mindsdb/home_rentals_model';
const folderOf = (...parts: string[]) => parseLocation(join(root, ...parts));

/** A run's manifest, as a run that ended writes it: `rows` scored over 2 segments, or failed with E_SERVICE_FATAL. */
async function ended(folder: ReturnType<typeof folderOf>, runId: string, startedAt: string, end: { rows: number } | 'failed', attempt = 1) {
  const counts = end === 'failed' ? undefined : { ...emptyCounts(), rowsIn: end.rows, rowsScored: end.rows, segments: 2 };
  const manifest = buildManifest({
    runId,
    startedAt,
    attempt,
    folder,
    request: { input: '/data/in.csv', model, options: { runId } },
    ...(counts && { counts }),
    ...(end === 'failed' && { error: new BatchScorerError('E_SERVICE_FATAL', 'the service failed') }),
  });
  await writeRunFile(local, runFiles.manifest(folder), manifest, { pretty: true });
}

describe('RunIndex', () => {
  it('reads only the run files that are new or changed at each refresh, and tells each folder’s run', async () => {
    await ended(folderOf('a'), 'a', '2026-01-01T00:00:00.000Z', { rows: 100 });
    await ended(folderOf('team', 'b'), 'b', '2026-01-02T00:00:00.000Z', 'failed');
    // A run under way: its claim and its attempt, no manifest yet.
    const c = folderOf('c');
    await claimRunFolder(local, c, 'c', { input: '/data/in.csv', model, out: root, options: parseRunOptions({ runId: 'c', priority: 'high' }) });
    await openAttempt(local, c, '2026-01-03T00:00:00.000Z');
    // A manifest naming another run than its folder's, and a folder of outputs alone: neither is a run.
    await ended(folderOf('d'), 'not-d', '2026-01-04T00:00:00.000Z', { rows: 1 });
    await writeFile(join(root, 'predictions.csv'), 'x\n');

    const { storage, taken } = counted(local);
    const index = new RunIndex({ storage, roots: [parseLocation(root)], refreshMs: 60_000, log: silentLogger });
    const first = await index.snapshot();
    expect(taken()).toEqual({ reads: ['a/manifest.json', 'b/manifest.json', 'c/attempt.json', 'c/claim.json', 'd/manifest.json'], listings: 1 });
    expect(first.runs.map((r) => [r.status.runId, r.status.state])).toEqual([
      ['c', 'running'],
      ['b', 'failed'],
      ['a', 'succeeded'],
    ]);
    expect(first.get('a')!.status).toMatchObject({
      folder: formatLocation(folderOf('a')),
      out: root,
      input: '/data/in.csv',
      model,
      attempts: 1,
      enqueuedAt: '2026-01-01T00:00:00.000Z',
      progress: { rowsDone: 100, rowsTotal: 100, segmentsDone: 2, segmentsTotal: 2 },
      result: { state: 'succeeded', counts: { rowsIn: 100, rowsScored: 100, rowsQuarantined: 0 } },
    });
    expect(first.get('b')!.status.result).toMatchObject({ state: 'failed', error: { code: 'E_SERVICE_FATAL' } });
    expect(first.get('c')!.status).toMatchObject({ state: 'running', priority: 'high', enqueuedAt: '2026-01-03T00:00:00.000Z', attempts: 1 });
    expect(first.get('c')!.status.result).toBeUndefined();

    // Read again within refreshMs: neither listed nor read.
    await index.snapshot();
    expect(taken()).toEqual({ reads: [], listings: 0 });
    // Rescanned with nothing changed: listed, nothing read.
    await index.refresh();
    expect(taken()).toEqual({ reads: [], listings: 1 });

    // c ends, a's manifest is written again (a later attempt), f is new, b's folder is removed:
    // only the manifests of c, a and f are read (c's claim and attempt stand unchanged beside its manifest).
    await ended(c, 'c', '2026-01-03T00:00:00.000Z', { rows: 7 });
    await ended(folderOf('a'), 'a', '2026-01-05T00:00:00.000Z', { rows: 1_000 }, 2);
    await ended(folderOf('f'), 'f', '2026-01-06T00:00:00.000Z', 'failed');
    await rm(join(root, 'team'), { recursive: true });
    await index.refresh();
    expect(taken()).toEqual({ reads: ['a/manifest.json', 'c/manifest.json', 'f/manifest.json'], listings: 1 });
    const second = await index.snapshot();
    expect(second.runs.map((r) => [r.status.runId, r.status.state, r.attempt])).toEqual([
      ['f', 'failed', 1],
      ['a', 'succeeded', 2],
      ['c', 'succeeded', 1],
    ]);
    expect(second.get('b')).toBeUndefined();

    // f is resumed: an attempt newer than its manifest is a run under way again; only that attempt is read.
    await openAttempt(local, folderOf('f'), '2026-01-07T00:00:00.000Z');
    await index.refresh();
    expect(taken()).toEqual({ reads: ['f/attempt.json'], listings: 1 });
    expect(second.get('f')!.status.state).toBe('failed');
    expect((await index.snapshot()).get('f')!.status).toMatchObject({ state: 'running', attempts: 2, enqueuedAt: '2026-01-07T00:00:00.000Z' });
  });
});
