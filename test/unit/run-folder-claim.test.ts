import { link, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRunOptions } from '../../src/config/run-options.js';
import { runFiles } from '../../src/scoring/prepared-run.js';
import { claimRunFolder } from '../../src/scoring/run-folder-claim.js';
import { runFileText } from '../../src/scoring/run-file.js';
import type { RunRequest } from '../../src/scoring/run-request.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';

const base = await mkdtemp(join(tmpdir(), 'run-folder-claim-'));
afterAll(() => rm(base, { recursive: true, force: true }));

const request = (batchSize: number): RunRequest => ({
  input: '/data/in.csv',
  model: 'p/m',
  out: base,
  options: parseRunOptions({ service: 'http://127.0.0.1:1', batchSize }),
});

describe('claimRunFolder', () => {
  it('of two runs of one id, the one that finds the other half-way through writing its claim waits for it, and reads its request', async () => {
    const folder = parseLocation(join(base, 'r'));
    const claim = runFiles.claim(folder);
    if (claim.kind !== 'file') throw new Error('a local claim');
    await mkdir(join(base, 'r', '_work'), { recursive: true });
    // The other run's claim, as local storage writes it: a half-written file first, then linked into place.
    const half = `${claim.path}.tmp-0123456789ab`;
    await writeFile(half, runFileText({ runId: 'r', request: request(500), claimedAt: new Date().toISOString() }, true));

    // The real local storage; the other run's link is made just before this run's second look,
    // so the first look surely finds the folder holding nothing but the half-written claim.
    const local = createStorage();
    let looks = 0;
    const storage = new Proxy(local, {
      get(target, name) {
        if (name === 'isEmpty') {
          return async (...args: Parameters<Storage['isEmpty']>) => {
            if (++looks === 2) await link(half, claim.path);
            return target.isEmpty(...args);
          };
        }
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });

    const stored = await claimRunFolder(storage, folder, 'r', request(1000));
    expect(looks).toBeGreaterThanOrEqual(2);
    expect(stored?.options.batchSize).toBe(500);
  });
});
