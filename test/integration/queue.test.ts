import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { rowsPerSecond } from '../../src/scoring/run-result.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { RunStatus } from '../../src/queue/producer.js';
import { rentalsCsv } from '../../src/simulator/sample-data.js';
import { parseLocation } from '../../src/storage/location.js';
import { createStorage } from '../../src/storage/storage.js';
import type { Storage } from '../../src/storage/storage-types.js';
import { runCli, startCli } from '../helpers/cli.js';
import { dropPrefix, useQueueFixture, waitFor, type WorkerProcess, reasonOf } from '../helpers/queue.js';
import { startS3Server, type S3Server } from '../helpers/s3-server.js';
import { score, tempDir, writeRentals } from '../helpers/scoring.js';

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
const ROWS = 30_000;
const SEGMENT_ROWS = 2_000;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, ROWS);
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const worker = f.worker;
const env = f.env;

/** A worker's debug lines about its segment jobs (see SegmentIntake), in the order it logged them. */
function segmentEvents(w: WorkerProcess): { msg: string; jobId: string }[] {
  return w
    .log()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; jobId?: string })
    .filter((e): e is { msg: string; jobId: string } => e.jobId !== undefined && ['segment taken', 'segment sent', 'segment scored'].includes(e.msg));
}

async function directRun(name: string): Promise<Buffer> {
  const out = join(tmp.dir, `direct-${name}`);
  await score(input, out, { service: f.sim.url, runId: 'd', segmentRows: SEGMENT_ROWS });
  return readFile(join(out, 'd', 'predictions.csv'));
}

describe('queue mode with real worker processes on Redis', () => {
  it('two workers score an S3 file together, both take segments, and the output is byte-identical to score', async () => {
    // No service in the job: the workers' own MODEL_SERVICE_URL applies.
    await f.setup({ latencyMs: 5 });
    const s3: S3Server = await startS3Server(['data', 'results']);
    const storage: Storage = createStorage(s3.settings);
    try {
      await storage.write(parseLocation('s3://data/in.csv'), rentalsCsv(ROWS));
      const s3env = { S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: 'true', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
      worker([], s3env);
      worker([], s3env);
      const { runId, created } = await f.queue.enqueue({
        input: 's3://data/in.csv',
        model: 'mindsdb/home_rentals_model',
        out: 's3://results/q',
        options: { runId: 'two', segmentRows: SEGMENT_ROWS },
      });
      expect({ runId, created }).toEqual({ runId: 'two', created: true });
      const status = await f.finished(runId);
      expect(status).toMatchObject({ state: 'succeeded', progress: { rowsDone: ROWS, rowsTotal: ROWS, segmentsDone: 15, segmentsTotal: 15 } });

      const queued = await text(await storage.read(parseLocation('s3://results/q/two/predictions.csv')));
      expect(sha256(queued)).toBe(sha256(await directRun('two')));
      const manifest = JSON.parse(await storage.readText(parseLocation('s3://results/q/two/manifest.json'))) as Manifest;
      expect(manifest.state).toBe('succeeded');
      // Enqueued by a program through RunQueue, naming no trigger: the manifest says so (null).
      expect(manifest.trigger).toBeNull();
      // The workers' segment profiles, merged, are what one process finds.
      const direct = JSON.parse(await readFile(join(tmp.dir, 'direct-two', 'd', 'manifest.json'), 'utf8')) as Manifest;
      expect(manifest.profile?.targets[0]).toMatchObject({ target: 'rental_price', count: ROWS, nulls: 0 });
      expect(manifest.profile).toEqual(direct.profile);
      const pids = f.workers.map((w) => String(w.child.pid)).sort();
      expect(manifest.queue?.workers.map((w) => w.split(':')[1]).sort()).toEqual(pids);
      expect(manifest.queue?.jobIds).toHaveLength(16);
      const logs = await f.queue.logs(runId);
      expect(logs[0]).toMatch(/^planned: 30000 rows in 15 segments/);
      const segmentLogs = logs.filter((l) => l.startsWith('segment '));
      expect(segmentLogs).toHaveLength(15);
      // Both workers scored segments, not just took part.
      const segmentPids = new Set(segmentLogs.map((l) => /\(\S+:(\d+), attempt/.exec(l)![1]));
      expect([...segmentPids].sort()).toEqual(pids);
      expect(logs.at(-1)).toMatch(/^assembled/);
    } finally {
      storage.close();
      await s3.close();
    }
  });

  it('a worker takes a next segment only once those it holds have sent all their batches, and each scores its share to the end', async () => {
    await f.setup({ latencyMs: 100 });
    // Segments of 40 batches at 100 ms on 4 slots (the default): about a second each.
    const workers = [worker([], { LOG_LEVEL: 'debug' }), worker([], { LOG_LEVEL: 'debug' })];
    await waitFor('both workers to start', () => workers.every((w) => w.log().includes('worker started')));
    const expected = await directRun('balance');
    const out = join(tmp.dir, 'balance');
    const options = { service: f.sim.url, runId: 'balance', segmentRows: SEGMENT_ROWS, batchSize: 50 };
    const { runId } = await f.queue.enqueue({ input, model: 'mindsdb/home_rentals_model', out, options });
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    expect(sha256(await readFile(join(out, runId, 'predictions.csv')))).toBe(sha256(expected));
    for (const w of workers) {
      const sending = new Set<string>();
      const held = new Set<string>();
      let most = 0;
      for (const e of segmentEvents(w)) {
        if (e.msg === 'segment taken') {
          // Never while a segment it holds still sends: the two would share its slots at half speed.
          expect([...sending]).toEqual([]);
          sending.add(e.jobId);
          held.add(e.jobId);
          most = Math.max(most, held.size);
        } else if (e.msg === 'segment sent') sending.delete(e.jobId);
        else held.delete(e.jobId);
      }
      // The next segment is taken while the last one drains: the slots stay busy across segment ends.
      expect(most).toBe(2);
    }
    // Both score to the end of the run: 8 and 7 of the 15.
    const pids = (await f.queue.logs(runId)).filter((l) => l.startsWith('segment ')).map((l) => /\(\S+:(\d+), attempt/.exec(l)![1]);
    expect(workers.map((w) => pids.filter((pid) => pid === String(w.child.pid)).length).sort()).toEqual([7, 8]);
  });

  it('survives three SIGKILLs at random points: complete, byte-identical, and re-scores at most the segments in flight', async () => {
    await f.setup({ latencyMs: 15 });
    const expected = await directRun('kill');
    const rowsBefore = f.sim.stats.predictRows;
    const out = join(tmp.dir, 'killed');
    let victim = worker(['--segments', '2']);
    worker(['--segments', '2']);
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { service: f.sim.url, runId: 'kill', segmentRows: SEGMENT_ROWS, batchSize: 250 },
    });
    const segmentsDir = join(out, runId, '_work', 'segments');
    const doneCount = async () => (existsSync(segmentsDir) ? (await readdir(segmentsDir)).filter((f) => f.endsWith('.done.json')).length : 0);
    for (let kill = 0; kill < 3; kill++) {
      const at = 2 + kill * 4 + Math.floor(Math.random() * 3);
      await waitFor(`${at} segments done`, async () => (await doneCount()) >= at);
      victim.child.kill('SIGKILL');
      await victim.exited;
      victim = worker(['--segments', '2']);
    }
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    const got = await readFile(join(out, runId, 'predictions.csv'));
    expect(sha256(got)).toBe(sha256(expected));
    // Each kill can lose at most the 2 segments its worker was scoring (plus the one-row plan probe).
    const twice = f.sim.stats.predictRows - rowsBefore - ROWS;
    expect(twice).toBeLessThanOrEqual(3 * 2 * SEGMENT_ROWS + 1);
  });

  it('on SIGTERM stops taking work, hands in-flight segments back within the timeout, and exits 0', async () => {
    await f.setup({ latencyMs: 100 });
    const expected = await directRun('term');
    const out = join(tmp.dir, 'term');
    // Segments of 40 batches at 100 ms on this worker's 4 slots: each takes about a second, far
    // longer than the 200 ms it may wait, so the SIGTERM finds a segment to hand back.
    const leaving = worker(['--shutdown-timeout', '200', '--max-in-flight', '4']);
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out,
      options: { service: f.sim.url, runId: 'term', segmentRows: SEGMENT_ROWS, batchSize: 50, concurrency: 8 },
    });
    await waitFor('scoring to start', async () => ((await f.queue.get(runId))?.progress?.rowsDone ?? 0) > 0);
    leaving.child.kill('SIGTERM');
    expect(await leaving.exited).toBe(0);
    expect(leaving.log()).toContain('handed back on shutdown');
    worker(['--max-in-flight', '8']);
    const status = await f.finished(runId);
    expect(status.state).toBe('succeeded');
    expect(sha256(await readFile(join(out, runId, 'predictions.csv')))).toBe(sha256(expected));
  });

  it('fails a run with a permanent error at once, with the reason on the job and in the manifest; enqueue --wait exits 1', async () => {
    await f.setup();
    worker();
    const out = join(tmp.dir, 'fail');
    const r = await runCli(['enqueue', input, '--model', 'mindsdb/no_such_model', '--out', out, '--run-id', 'bad', '--wait'], env());
    expect(r.code).toBe(1);
    expect(r.stdout.trim()).toBe('bad');
    const status = await f.queue.get('bad');
    expect(status).toMatchObject({ state: 'failed', attempts: 1 });
    expect(reasonOf(status)).toMatch(/Model not found.*E_MODEL_NOT_FOUND/);
    expect(JSON.parse(await readFile(join(out, 'bad', 'manifest.json'), 'utf8'))).toMatchObject({
      state: 'failed',
      error: { code: 'E_MODEL_NOT_FOUND' },
      // A run that failed before it was prepared still says what started it.
      trigger: { kind: 'cli', command: 'enqueue' },
    });
    expect(status!.trigger).toEqual({ kind: 'cli', command: 'enqueue' });
    expect(existsSync(join(out, 'bad', '_SUCCESS'))).toBe(false);
  });

  it('enqueue validates before Redis, runs the same run id once, and status shows the run', async () => {
    await f.setup();
    const bad = await runCli(['enqueue', input, '--model', 'mindsdb/home_rentals_model', '--out', tmp.dir, '--batch-size', '0'], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/enqueue: --batch-size: must be at least 1/);
    expect(await f.queue.list()).toEqual([]);

    const out = join(tmp.dir, 'once');
    const args = ['enqueue', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', 'once', '--limit', '100', '--json'];
    const first = await runCli(args, env());
    const second = await runCli(args, env());
    expect(JSON.parse(first.stdout)).toEqual({ runId: 'once', created: true });
    expect(JSON.parse(second.stdout)).toEqual({ runId: 'once', created: false });
    worker();
    await f.finished('once');
    expect(await f.queue.list()).toHaveLength(1);
    const status = await runCli(['status', 'once', '--json'], env());
    expect(JSON.parse(status.stdout)).toMatchObject({
      runId: 'once',
      state: 'succeeded',
      progress: { rowsDone: 100, rowsTotal: 100 },
      folder: join(out, 'once'),
    });
    const text = await runCli(['status'], env());
    expect(text.stdout).toMatch(/^once {2}succeeded {2}100\/100 rows/);

    // Once its job is gone (retention), the same run id enqueued again finds the run done and scores nothing.
    const rows = f.sim.stats.predictRows;
    worker([], { QUEUE_PREFIX: `${f.prefix}-again` });
    const again = await runCli([...args.slice(0, -1), '--wait'], { ...env(), QUEUE_PREFIX: `${f.prefix}-again` });
    expect(again.code).toBe(0);
    expect(f.sim.stats.predictRows).toBe(rows);
    await dropPrefix(`${f.prefix}-again`);
  });
});

async function statusJson(runId: string): Promise<RunStatus> {
  const r = await runCli(['status', runId, '--json'], f.env());
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as RunStatus;
}

describe('status', () => {
  /** The first rows of the input (--limit): a run of a few seconds at most. */
  const STATUS_ROWS = 10_000;

  it('the rows/s of a finished run is its average over its own time, and stays so as the clock goes on', async () => {
    await f.setup({ latencyMs: 20 });
    f.worker();
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out: join(tmp.dir, 'rate'),
      options: { service: f.sim.url, runId: 'rate', segmentRows: SEGMENT_ROWS, batchSize: 100, limit: STATUS_ROWS },
    });
    await f.finished(runId);
    const first = await statusJson(runId);
    // A rate over the time up to "now" would fall by a third or more over the next 1.5 s.
    const asked = Date.now();
    await waitFor('the clock to move on by 1.5 s', () => Date.now() - asked > 1_500, 5_000);
    const second = await statusJson(runId);

    expect(first).toMatchObject({ state: 'succeeded', progress: { rowsDone: STATUS_ROWS, etaSeconds: 0 } });
    expect(second.progress).toEqual(first.progress);
    // The run started after it was enqueued: its rate is at least the rows over enqueue-to-finish.
    const enqueueToFinishMs = Date.parse(first.finishedAt!) - Date.parse(first.enqueuedAt);
    expect(first.progress!.rowsPerSecond).toBeGreaterThanOrEqual(Math.floor((STATUS_ROWS * 1000) / enqueueToFinishMs));
    // Settled, the run's rate is its record's, the one figure status, the run pages and the pipeline pages show.
    const manifest = JSON.parse(await readFile(join(tmp.dir, 'rate', runId, 'manifest.json'), 'utf8')) as Manifest;
    expect(first.result?.rowsPerSecond).toBe(rowsPerSecond(manifest));
    expect(second.result).toEqual(first.result);
  });

  it('--watch, not on a terminal, writes a frame only when it changed and --logs each milestone once; --json stays JSON lines', async () => {
    await f.setup({ latencyMs: 50 });
    const { runId } = await f.queue.enqueue({
      input,
      model: 'mindsdb/home_rentals_model',
      out: join(tmp.dir, 'watch'),
      options: { service: f.sim.url, runId: 'watch', segmentRows: SEGMENT_ROWS, batchSize: 100, concurrency: 2, limit: STATUS_ROWS },
    });
    const text = startCli(['status', runId, '--watch', '--logs'], f.env());
    const json = startCli(['status', runId, '--watch', '--logs', '--json'], f.env());
    // No worker yet: the run waits, and its frame stays the same for a few rounds (one a second).
    await waitFor('both to show the waiting run', () => text.stdout().includes('watch  queued') && json.stdout().includes('"state":"queued"'), 15_000);
    const since = Date.now();
    await waitFor('a few rounds to pass', () => Date.now() - since > 2_500, 5_000);
    f.worker();
    expect(await text.exited).toBe(0);
    expect(await json.exited).toBe(0);
    const logs = await f.queue.logs(runId);
    expect(logs.length).toBe(7); // planned, 5 segments, assembled

    const lines = text.stdout().trimEnd().split('\n');
    for (const log of logs) expect(lines.filter((l) => l === log)).toHaveLength(1);
    const frames = lines.filter((l) => l.startsWith(`${runId}  `));
    expect(frames.filter((l) => l.startsWith(`${runId}  queued`))).toHaveLength(1);
    expect(frames.at(-1)).toMatch(/^watch {2}succeeded {2}10000\/10000 rows/);
    for (let i = 1; i < frames.length; i++) expect(frames[i]).not.toBe(frames[i - 1]);

    const records = json
      .stdout()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Partial<RunStatus> & { log?: string });
    expect(records.filter((r) => r.log !== undefined)).toEqual(logs.map((log) => ({ runId, log })));
    const states = records.filter((r) => r.log === undefined);
    expect(states.filter((r) => r.state === 'queued')).toHaveLength(1);
    expect(states.at(-1)).toMatchObject({ runId, state: 'succeeded' });
    for (let i = 1; i < states.length; i++) expect(states[i]).not.toEqual(states[i - 1]);
  });
});
