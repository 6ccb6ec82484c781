import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli, startCli } from '../helpers/cli.js';
import { folderTree } from '../helpers/folder-tree.js';
import { useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { startSimulator, tempDir, writeRentals, writeRentalsWithEngineErrors } from '../helpers/scoring.js';

// A run touches only what it wrote: its folder is one it made (its claim, or an earlier attempt's
// run.json or manifest naming its run id), and its cleanup removes its own files by name. Through
// the real CLI and worker processes, against the simulator as a real HTTP server.

const MODEL = 'mindsdb/home_rentals_model';
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
/** 300 rows, one in 100 failing in the engine: quarantined, so `--max-error-rate 0` fails the run. */
let someBad: string;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  input = join(tmp.dir, 'in.csv');
  await writeRentals(input, 300);
  someBad = join(tmp.dir, 'some-bad.csv');
  await writeRentalsWithEngineErrors(someBad, 300, (i) => i % 100 === 7);
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

const env = () => ({ MODEL_SERVICE_URL: sim.url, LOG_LEVEL: 'warn' });
const score = (args: string[], extra: Record<string, string> = {}) => runCli(['score', ...args], { ...env(), ...extra });

describe('a run folder that is not the run’s', () => {
  it('is refused with E_OUTPUT before describe, when a manifest in it names another run, and left byte for byte', async () => {
    const out = join(tmp.dir, 'copied');
    const folder = join(out, 'r');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'manifest.json'), JSON.stringify({ runId: 'another', state: 'succeeded' }));
    await writeFile(join(folder, 'predictions.csv'), 'theirs\n');
    const before = await folderTree(out);
    const describes = sim.stats.describeRequests;

    const r = await score([input, '--model', MODEL, '--out', out, '--run-id', 'r']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(
        `^batch-scorer: ${folder} already exists and is not run r's folder: its manifest.json names another run \\(manifest.json, predictions.csv\\);.* \\[E_OUTPUT\\]$`,
        'm',
      ),
    );
    expect(r.stderr).not.toMatch(/run folder:|resume:/);
    expect(sim.stats.describeRequests).toBe(describes);
    expect(await folderTree(out)).toEqual(before);
  });

  it('an empty folder made beforehand is taken, as nothing in it can be lost', async () => {
    const out = join(tmp.dir, 'premade');
    await mkdir(join(out, 'r'), { recursive: true });
    const r = await score([input, '--model', MODEL, '--out', out, '--run-id', 'r']);
    expect(r.code).toBe(0);
    expect((await readdir(join(out, 'r'))).sort()).toEqual(['_SUCCESS', 'describe.json', 'errors.jsonl', 'manifest.json', 'predictions.csv']);
  });
});

describe('the run’s own folder', () => {
  it('keeps what someone else put in its _work when the run succeeds: cleanup removes only the files the run wrote', async () => {
    const out = join(tmp.dir, 'own');
    const folder = join(out, 'r');
    const args = [someBad, '--model', MODEL, '--out', out, '--run-id', 'r', '--segment-rows', '100', '--batch-size', '20'];
    const failed = await score([...args, '--max-error-rate', '0']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/\[E_ERROR_RATE\]\nrun folder: \S+; resume: batch-scorer score /);
    expect(existsSync(join(folder, '_work', 'claim.json'))).toBe(true);
    await writeFile(join(folder, '_work', 'notes.txt'), 'why this run failed');
    await writeFile(join(folder, '_work', 'segments', 'mine.txt'), 'a note beside the parts');

    const resumed = await score([...args, '--max-error-rate', '0.05']);
    expect(resumed.code).toBe(0);
    expect(await folderTree(join(folder, '_work'))).toEqual({
      'notes.txt': expect.any(String) as string,
      'segments/': 'folder',
      'segments/mine.txt': expect.any(String) as string,
    });
    expect(await readFile(join(folder, '_work', 'notes.txt'), 'utf8')).toBe('why this run failed');
    expect(existsSync(join(folder, '_SUCCESS'))).toBe(true);
  });

  it('is claimed by one of two runs of one id started at once; the other, asking for another output, is refused', async () => {
    const out = join(tmp.dir, 'race');
    const start = (batchSize: string) => startCli(['score', input, '--model', MODEL, '--out', out, '--run-id', 'r', '--batch-size', batchSize], env());
    const runs = [start('50'), start('60')];
    const codes = await Promise.all(runs.map((r) => r.exited));
    expect([...codes].sort()).toEqual([0, 2]);
    const loser = runs[codes.indexOf(2)];
    expect(loser.stderr()).toMatch(/\[E_RUN_EXISTS\]$/m);
    const manifest = JSON.parse(await readFile(join(out, 'r', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({ state: 'succeeded', options: { batchSize: codes[0] === 0 ? 50 : 60 } });
  });

  it('a planning that failed is started again by the same request, once its input is fixed', async () => {
    const out = join(tmp.dir, 'replanned');
    const file = join(tmp.dir, 'fixed-later.csv');
    await writeFile(file, 'sqft,location\n1,"open\n');
    const args = [file, '--model', MODEL, '--out', out, '--run-id', 'r'];
    const failed = await score(args);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/never closed.*\[E_INPUT\]\nrun folder: \S+\n$/);
    expect(await folderTree(join(out, 'r'))).toEqual({
      '_work/': 'folder',
      '_work/attempt.json': expect.any(String) as string,
      '_work/claim.json': expect.any(String) as string,
      'manifest.json': expect.any(String) as string,
    });
    await writeRentals(file, 50);
    const again = await score([...args, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ state: 'succeeded', rowsScored: 50 });
  });
});

describe('the error that stopped a run', () => {
  it('wins over a cleanup that fails too: a run folder turned into a file mid-run', async () => {
    const slow = await startSimulator({ latencyMs: 100 });
    try {
      const big = join(tmp.dir, 'big.csv');
      await writeRentals(big, 3_000);
      const out = join(tmp.dir, 'vanished');
      const folder = join(out, 'r');
      const cli = startCli(
        ['score', big, '--model', MODEL, '--out', out, '--run-id', 'r', '--batch-size', '10', '--concurrency', '2', '--segment-rows', '500'],
        {
          MODEL_SERVICE_URL: slow.url,
          LOG_LEVEL: 'warn',
        },
      );
      // Scoring has begun once predict requests follow the probe: segment parts are being written.
      await waitFor('scoring to begin', () => slow.stats.predictRequests >= 4, 30_000);
      await rename(folder, `${folder}-moved`);
      await writeFile(folder, 'in the way');
      expect(await cli.exited).toBe(2);
      // The segment's write failed first; removing its half-written file failed as well (ENOTDIR), and must not be what is reported.
      expect(cli.stderr()).toMatch(new RegExp(`^batch-scorer: run r failed: write ${folder}/_work/segments/\\S+: .*\\[E_STORAGE_REFUSED\\]$`, 'm'));
      expect(cli.stderr()).not.toMatch(/E_INTERNAL|lstat/);
      // No failure is recorded where the run's folder no longer is.
      expect(await readFile(folder, 'utf8')).toBe('in the way');
    } finally {
      await slow.close();
    }
  });
});

describe('queue mode', () => {
  const f = useQueueFixture();

  it('a worker refuses a folder that is not the run’s, and leaves it as it was', async () => {
    await f.setup();
    f.worker();
    const out = join(tmp.dir, 'queued-foreign');
    await mkdir(join(out, 'q', '_work'), { recursive: true });
    await writeFile(join(out, 'q', 'predictions.csv'), 'theirs\n');
    await writeFile(join(out, 'q', '_work', 'notes.txt'), 'notes\n');
    const before = await folderTree(out);
    await f.queue.enqueue({ input, model: MODEL, out, options: { runId: 'q' } });
    const status = await f.finished('q');
    expect(status).toMatchObject({ state: 'failed', attempts: 1 });
    expect(reasonOf(status)).toMatch(
      /already exists and is not run q's folder: no run q wrote its files \(_work\/notes\.txt, predictions\.csv\).*\[E_OUTPUT\]/,
    );
    expect(f.sim.stats.describeRequests).toBe(0);
    expect(await folderTree(out)).toEqual(before);
  });

  it('a failed run enqueued again with another model is refused at once, and its status offers no resume that cannot help', async () => {
    await f.setup();
    f.worker();
    const out = join(tmp.dir, 'queued-model');
    const enqueue = (model: string, extra: string[] = []) => runCli(['enqueue', input, '--model', model, '--out', out, '--run-id', 'm', ...extra], f.env());
    const failed = await enqueue('mindsdb/nope', ['--wait']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^m {2}failed .*\[E_MODEL_NOT_FOUND\]$/m);
    expect(failed.stderr).not.toMatch(/resume:/);
    const manifest = JSON.parse(await readFile(join(out, 'm', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({ state: 'failed', started: false, error: { code: 'E_MODEL_NOT_FOUND' } });

    const other = await enqueue(MODEL);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(
      /run m was enqueued for another output: this asks --model mindsdb\/home_rentals_model, where the run has mindsdb\/nope;.*\[E_RUN_EXISTS\]$/m,
    );
    expect((await f.queue.get('m'))?.model).toBe('mindsdb/nope');
  });
});

describe('on S3 (s3rver)', () => {
  let s3: S3Server;
  let storage: Storage;
  beforeAll(async () => {
    s3 = await startS3Server(['results']);
    storage = createStorage(s3.settings);
  });
  afterAll(async () => {
    storage.close();
    await s3.close();
  });

  /** Every key below the prefix with its ETag. */
  const objects = async (prefix: string) => {
    const found: Record<string, string | undefined> = {};
    for await (const o of storage.list(parseLocation(prefix))) found[o.location.kind === 's3' ? o.location.key : ''] = o.etag;
    return found;
  };

  it('a prefix holding objects no run of this id wrote is refused and left as it was', async () => {
    await storage.write(parseLocation('s3://results/runs/taken/predictions.csv'), 'theirs\n');
    await storage.write(parseLocation('s3://results/runs/taken/_work/notes.txt'), 'notes\n');
    const before = await objects('s3://results/runs/taken');
    const requestsBefore = s3.requests.length;
    const r = await score([input, '--model', MODEL, '--out', 's3://results/runs', '--run-id', 'taken'], s3.env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /s3:\/\/results\/runs\/taken already exists and is not run taken's folder: .*\(_work\/notes\.txt, predictions\.csv\).*\[E_OUTPUT\]$/m,
    );
    expect(await objects('s3://results/runs/taken')).toEqual(before);
    // Nothing was even attempted there: no PUT, no DELETE.
    expect(s3.requests.slice(requestsBefore).filter((q) => q.method !== 'GET' && q.method !== 'HEAD')).toEqual([]);
  });

  it('a succeeded run removes its own _work objects by name, and no other', async () => {
    const args = [someBad, '--model', MODEL, '--out', 's3://results/runs', '--run-id', 'own', '--segment-rows', '100', '--batch-size', '20'];
    expect((await score([...args, '--max-error-rate', '0'], s3.env)).code).toBe(1);
    expect(Object.keys(await objects('s3://results/runs/own/_work'))).toContain('runs/own/_work/claim.json');
    await storage.write(parseLocation('s3://results/runs/own/_work/notes.txt'), 'mine\n');
    expect((await score([...args, '--max-error-rate', '0.05'], s3.env)).code).toBe(0);
    expect(Object.keys(await objects('s3://results/runs/own/_work'))).toEqual(['runs/own/_work/notes.txt']);
    expect(await storage.exists(parseLocation('s3://results/runs/own/_SUCCESS'))).toBe(true);
  });
});
