import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunOptions, type RunOptionsInput } from '../../src/config/run-options.js';
import { serviceClientFactory } from '../../src/app/service-clients.js';
import { DEFAULT_LIMITS } from '../../src/config/limits.js';
import { silentLogger } from '../../src/log.js';
import type { RunTrigger } from '../../src/scoring/run-trigger.js';
import { openAttempt } from '../../src/scoring/run-attempt.js';
import { claimRunFolder } from '../../src/scoring/run-folder-claim.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import type { Simulator } from '../../src/simulator/server.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli } from '../helpers/cli.js';
import { folderTree } from '../helpers/folder-tree.js';
import { dropPrefix, uniquePrefix, useQueueFixture, REDIS_URL } from '../helpers/queue.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { startSimulator, tempDir, writeRentals, writeRentalsWithEngineErrors, writeShiftedRentals } from '../helpers/scoring.js';

const DAY = 86_400_000;
const MODEL = 'mindsdb/home_rentals_model';
const NO_JOBS = { JOBS_DIR: '/nonexistent/batch-scorer-test-jobs' };

let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let storage: Storage;
/** The run folders every local test prunes a copy of (see copyOf). */
let template: string;
const inputs = { plain: '', shifted: '', failing: '' };
let copies = 0;

/** The trigger of a run of pipeline `nightly`, fired `daysAgo` days ago. */
const nightly = (daysAgo: number): RunTrigger => ({
  kind: 'schedule',
  pipeline: 'nightly',
  fireTime: new Date(Date.now() - daysAgo * DAY).toISOString(),
  cron: '0 2 * * *',
  tz: 'UTC',
});

/** Scores a run in this process, as `score` does; a run that fails or is held leaves its folder all the same. */
async function run(out: string, runId: string, input: string, options: RunOptionsInput = {}, trigger?: RunTrigger, s3?: S3Server): Promise<void> {
  const store = s3 ? createStorage(s3.settings) : storage;
  try {
    await scoreRun(
      { input, out, model: MODEL, options: parseRunOptions({ service: sim.url, runId, ...options }), ...(trigger && { trigger }) },
      { storage: store, log: silentLogger, predictorFor: serviceClientFactory(new Map(), DEFAULT_LIMITS) },
    );
  } catch {
    // Failed or held: its manifest says so.
  } finally {
    if (s3) store.close();
  }
}

/** Makes a run look as if it started and ended `daysAgo` days ago, as its manifest records it. */
async function age(out: string, runId: string, daysAgo: number, store: Storage = storage): Promise<void> {
  const at = parseLocation(`${out}/${runId}/manifest.json`);
  const manifest = JSON.parse(await store.readText(at)) as { startedAt: string; finishedAt: string };
  manifest.startedAt = new Date(Date.now() - daysAgo * DAY - 60_000).toISOString();
  manifest.finishedAt = new Date(Date.now() - daysAgo * DAY).toISOString();
  await store.write(at, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** A fresh copy of the template's run folders, and a sibling folder outside it that no prune may touch. */
async function copyOf(): Promise<{ out: string; sibling: string }> {
  const out = join(tmp.dir, `out-${++copies}`);
  const sibling = `${out}-b`;
  await cp(template, out, { recursive: true });
  await cp(join(template, 'old-a'), join(sibling, 'old-a'), { recursive: true });
  return { out, sibling };
}

/** The queue prefix of the local tests: an empty queue (dropped after them). */
const localPrefix = uniquePrefix();

/** Runs `runs prune` over an empty queue, its report as JSON. */
async function prune(out: string, flags: string[], env: Record<string, string> = {}) {
  const result = await runCli(['runs', 'prune', '--out', out, '--json', ...flags], { QUEUE_PREFIX: localPrefix, ...NO_JOBS, ...env });
  const report = result.code === 0 ? (JSON.parse(result.stdout) as { folders: { name: string; action: string; reason: string; why: string }[] }) : undefined;
  const actions = Object.fromEntries((report?.folders ?? []).map((f) => [f.name, `${f.action} ${f.reason}`]));
  return { ...result, report, actions };
}

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  storage = createStorage();
  inputs.plain = join(tmp.dir, 'plain.csv');
  inputs.shifted = join(tmp.dir, 'shifted.csv');
  inputs.failing = join(tmp.dir, 'failing.csv');
  await writeRentals(inputs.plain, 40);
  await writeShiftedRentals(inputs.shifted, 40, 3);
  await writeRentalsWithEngineErrors(inputs.failing, 40, (i) => i === 3);
  template = join(tmp.dir, 'template');
  const failing = { maxErrorRate: 0 };
  // Runs no pipeline started: three old, one young.
  for (const [runId, days] of [
    ['old-a', 40],
    ['old-b', 35],
    ['old-c', 30],
    ['young', 0],
  ] as const) {
    await run(template, runId, inputs.plain);
    if (days > 0) await age(template, runId, days);
  }
  // Pipeline nightly: two runs that succeeded (the newer is its drift baseline), then one that failed.
  await run(template, 'n1', inputs.plain, {}, nightly(60));
  await run(template, 'n2', inputs.plain, {}, nightly(50));
  await run(template, 'n3', inputs.failing, failing, nightly(45));
  for (const [runId, days] of [
    ['n1', 60],
    ['n2', 50],
    ['n3', 45],
  ] as const)
    await age(template, runId, days);
  // Held by its drift gate; failed, then resumed (attempt 2 under way); claimed, under way.
  await run(template, 'held', inputs.shifted, { baselineRun: 'old-a', driftFail: 0.25 });
  await run(template, 'resumed', inputs.failing, failing);
  for (const [runId, days] of [
    ['held', 42],
    ['resumed', 40],
  ] as const)
    await age(template, runId, days);
  await openAttempt(storage, parseLocation(join(template, 'resumed')), new Date().toISOString());
  const request = { input: inputs.plain, model: MODEL, out: template, options: parseRunOptions({ runId: 'under-way' }) };
  await claimRunFolder(storage, parseLocation(join(template, 'under-way')), 'under-way', request);
  // Not batch-scorer's: a folder of someone's, one whose manifest names another run, a file.
  await mkdir(join(template, 'foreign'));
  await writeFile(join(template, 'foreign', 'notes.txt'), 'mine\n');
  await cp(join(template, 'old-a'), join(template, 'impostor'), { recursive: true });
  await writeFile(join(template, 'notes.txt'), 'mine too\n');
}, 60_000);
afterAll(async () => {
  await dropPrefix(localPrefix);
  storage?.close();
  await sim?.close();
  await tmp?.cleanup();
});

/** What every prune of the template keeps, and why. */
const ALWAYS_KEPT = {
  n2: 'kept baseline',
  held: 'kept held',
  resumed: 'kept resumed',
  'under-way': 'kept unfinished',
  foreign: 'kept foreign',
  impostor: 'kept foreign',
};

describe('batch-scorer runs prune (child process, local folders)', () => {
  it('--dry-run says what would go and why the others stay, and changes nothing', async () => {
    const { out, sibling } = await copyOf();
    const before = await folderTree(tmp.dir);
    const r = await prune(out, ['--older-than', '7d', '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.actions).toEqual({
      ...ALWAYS_KEPT,
      'old-a': 'would delete old',
      'old-b': 'would delete old',
      'old-c': 'would delete old',
      n1: 'would delete old',
      n3: 'would delete old',
      young: 'kept young',
    });
    const why = Object.fromEntries(r.report!.folders.map((f) => [f.name, f.why]));
    expect(why.n2).toBe('the drift baseline of pipeline nightly: its newest run that succeeded');
    expect(why.foreign).toMatch(/^not a batch-scorer run folder: no .* names run foreign$/);
    expect(why['old-a']).toBe('succeeded, ended 40d ago');
    expect(why.n3).toBe('failed, ended 45d ago');
    expect(r.stderr).toMatch(/^would delete 5 run folder\(s\) \(\d+ files, [\d,]+ bytes\) of .*out-\d+ \(older than 7d\); kept 7: /m);
    expect(await folderTree(tmp.dir)).toEqual(before);
    expect(existsSync(sibling)).toBe(true);
  });

  it('--older-than deletes the old finished run folders, whole, and nothing else below --out or beside it', async () => {
    const { out, sibling } = await copyOf();
    const kept = ['young', 'n2', 'held', 'resumed', 'under-way', 'foreign', 'impostor', 'notes.txt'];
    const keptBefore = await Promise.all(kept.map((name) => (name.endsWith('.txt') ? readFile(join(out, name), 'utf8') : folderTree(join(out, name)))));
    const siblingBefore = await folderTree(sibling);
    const r = await prune(out, ['--older-than', '7d']);
    expect([r.code, r.stderr]).toEqual([0, expect.stringMatching(/^deleted 5 run folder\(s\)/)]);
    expect(r.actions).toMatchObject({ 'old-a': 'deleted old', n1: 'deleted old', n3: 'deleted old', young: 'kept young' });
    for (const gone of ['old-a', 'old-b', 'old-c', 'n1', 'n3']) expect(existsSync(join(out, gone)), gone).toBe(false);
    const keptAfter = await Promise.all(kept.map((name) => (name.endsWith('.txt') ? readFile(join(out, name), 'utf8') : folderTree(join(out, name)))));
    expect(keptAfter).toEqual(keptBefore);
    expect(await folderTree(sibling)).toEqual(siblingBefore);
    // Again: nothing more goes.
    const again = await prune(out, ['--older-than', '7d']);
    expect(Object.values(again.actions).filter((a) => a.startsWith('deleted'))).toEqual([]);
  });

  it('--keep keeps the newest finished runs of each pipeline, the runs of no pipeline counted as one; with --older-than, a run goes once neither keeps it', async () => {
    const keepOnly = await prune((await copyOf()).out, ['--keep', '1']);
    expect(keepOnly.actions).toEqual({
      ...ALWAYS_KEPT,
      n3: 'kept newest',
      n1: 'deleted old',
      young: 'kept newest',
      'old-a': 'deleted old',
      'old-b': 'deleted old',
      'old-c': 'deleted old',
    });
    const both = await prune((await copyOf()).out, ['--keep', '2', '--older-than', '36d']);
    expect(both.actions).toMatchObject({
      young: 'kept newest',
      'old-c': 'kept newest',
      'old-b': 'kept young',
      'old-a': 'deleted old',
      n3: 'kept newest',
      n1: 'deleted old',
    });
  });

  it('takes RETENTION_OLDER_THAN and RETENTION_KEEP when no flag says, and keeps a baseline a pipeline of the jobs folder names', async () => {
    const jobs = join(tmp.dir, 'jobs');
    await mkdir(jobs, { recursive: true });
    const declared = `name: weekly\nmodel: ${MODEL}\ninput: ${inputs.plain}\noutput: ${tmp.dir}/weekly/\nschedule: { cron: '0 3 * * 1', tz: UTC }\noptions: { baselineRun: old-b }\n`;
    await writeFile(join(jobs, 'weekly.yaml'), declared);
    const r = await prune((await copyOf()).out, [], { RETENTION_OLDER_THAN: '33d', RETENTION_KEEP: '0', JOBS_DIR: jobs });
    expect(r.code).toBe(0);
    expect(r.actions).toMatchObject({ 'old-a': 'deleted old', 'old-b': 'kept baseline', 'old-c': 'kept young', n1: 'deleted old' });
  });

  it('--no-queue asks no Redis: it prunes where none answers', async () => {
    const { out } = await copyOf();
    const r = await prune(out, ['--older-than', '7d', '--no-queue'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect([r.code, r.stderr]).toEqual([0, expect.stringMatching(/^deleted 5 run folder\(s\)/)]);
    expect(r.actions).toMatchObject({ ...ALWAYS_KEPT, 'old-a': 'deleted old', young: 'kept young' });
  });

  it('refuses a bad --older-than or RETENTION_OLDER_THAN, naming it, and a prune nothing bounds, with exit 2 and nothing deleted', async () => {
    const { out } = await copyOf();
    const before = await folderTree(out);
    const bad = await prune(out, ['--older-than', '30 days']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--older-than takes a duration such as 30d, 12h or 90m .*got "30 days".*\[E_USAGE\]/)]);
    const badSetting = await prune(out, ['--keep', '3'], { RETENTION_OLDER_THAN: 'forever' });
    expect([badSetting.code, badSetting.stderr]).toEqual([2, expect.stringMatching(/RETENTION_OLDER_THAN takes a duration .*got "forever".*\[E_CONFIG\]/)]);
    const unbounded = await prune(out, []);
    expect([unbounded.code, unbounded.stderr]).toEqual([2, expect.stringMatching(/give --older-than or --keep .*RETENTION_OLDER_THAN.*\[E_USAGE\]/)]);
    const negative = await prune(out, ['--keep', '-1']);
    expect(negative.code).toBe(2);
    expect(await folderTree(out)).toEqual(before);
  });
});

describe('batch-scorer runs prune with the queue (a real worker process on Redis)', () => {
  const f = useQueueFixture();

  it("deletes a finished queued run's folder with its jobs and Redis keys, and keeps a run the queue has again, live", async () => {
    await f.setup();
    const out = join(tmp.dir, 'queued');
    const redis = new Redis(REDIS_URL);
    try {
      const worker = f.worker();
      await f.queue.enqueue({ input: inputs.plain, model: MODEL, out, options: { runId: 'q-done' } });
      await f.queue.enqueue({ input: inputs.failing, model: MODEL, out, options: { runId: 'q-failed', maxErrorRate: 0 } });
      expect((await f.finished('q-done')).state).toBe('succeeded');
      expect((await f.finished('q-failed')).state).toBe('failed');
      worker.child.kill('SIGKILL');
      await worker.exited;
      for (const runId of ['q-done', 'q-failed']) await age(out, runId, 40);
      // Resumed with no worker to take it: waiting on the queue, its folder still says failed.
      await f.queue.resume('q-failed');
      const keysOf = async (runId: string) => (await redis.keys(`${f.prefix}*`)).filter((k) => k.includes(runId));
      expect(await keysOf('q-done')).toEqual(expect.arrayContaining([`${f.prefix}:runs:q-done`, `${f.prefix}:progress:q-done`, `${f.prefix}:caps:q-done`]));

      const r = await runCli(['runs', 'prune', '--out', out, '--older-than', '7d', '--json'], { ...f.env(), ...NO_JOBS });
      expect(r.code).toBe(0);
      const actions = Object.fromEntries(
        (JSON.parse(r.stdout) as { folders: { name: string; action: string; why: string }[] }).folders.map((x) => [x.name, `${x.action}: ${x.why}`]),
      );
      expect(actions).toEqual({ 'q-done': 'deleted: succeeded, ended 40d ago', 'q-failed': 'kept: the queue has it queued' });
      expect(existsSync(join(out, 'q-done'))).toBe(false);
      expect(await keysOf('q-done')).toEqual([]);
      expect(await redis.zrange(`${f.prefix}:run-keys`, 0, -1)).toEqual(['q-failed\n']);
      expect((await f.queue.get('q-failed'))?.state).toBe('queued');
      expect(existsSync(join(out, 'q-failed', 'manifest.json'))).toBe(true);
    } finally {
      redis.disconnect();
    }
  });
});

describe('batch-scorer runs prune on S3 (an in-process S3 server)', () => {
  it('deletes the old run folders below the prefix, and no object of a foreign folder or of a prefix beside it', async () => {
    const s3 = await startS3Server(['results']);
    const store = createStorage(s3.settings);
    const prefix = uniquePrefix();
    try {
      for (const runId of ['s-old', 's-young']) await run('s3://results/runs', runId, inputs.plain, {}, undefined, s3);
      await run('s3://results/runs-b', 's-old', inputs.plain, {}, undefined, s3);
      await age('s3://results/runs', 's-old', 40, store);
      await age('s3://results/runs-b', 's-old', 40, store);
      await store.write(parseLocation('s3://results/runs/foreign/data.csv'), 'a,b\n1,2\n');
      const listed = async (at: string) => {
        const keys: string[] = [];
        for await (const file of store.list(parseLocation(at))) keys.push(file.location.kind === 's3' ? file.location.key : '');
        return keys;
      };
      const before = { runs: await listed('s3://results/runs'), beside: await listed('s3://results/runs-b') };
      expect(before.runs.some((k) => k.startsWith('runs/s-old/'))).toBe(true);

      const r = await runCli(['runs', 'prune', '--out', 's3://results/runs', '--older-than', '7d'], { ...s3.env, QUEUE_PREFIX: prefix, ...NO_JOBS });
      expect([r.code, r.stderr]).toEqual([0, expect.stringMatching(/^deleted 1 run folder\(s\)/)]);
      expect(r.stdout).toMatch(/^deleted {7}s-old {2}succeeded, ended 40d ago/m);
      expect(await listed('s3://results/runs')).toEqual(before.runs.filter((k) => !k.startsWith('runs/s-old/')));
      expect(await listed('s3://results/runs-b')).toEqual(before.beside);
    } finally {
      store.close();
      await s3.close();
      await dropPrefix(prefix);
    }
  });
});
