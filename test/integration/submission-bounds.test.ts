// The bounds a submission meets before any job of it exists, through a real `serve`, a real
// `enqueue` and a real worker on real Redis: segments per run (MAX_SEGMENTS, and so a smallest
// segmentRows), and a dry run's work on the server (MAX_DRY_RUN_SECONDS, MAX_DRY_RUN_BYTES).
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RUNS_QUEUE, SEGMENTS_QUEUE } from '../../src/queue/queues.js';
import { runCli } from '../helpers/cli.js';
import { useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { useRentalsInput } from '../helpers/scoring.js';
import { useServeProcesses } from '../helpers/serve.js';

const TOKEN = 'tok-bounds-5e1a9c7d3b2f';
const MODEL = 'mindsdb/home_rentals_model';
const ROWS = 100_000;

const files = useRentalsInput(ROWS);
const f = useQueueFixture();
const serve = useServeProcesses();

async function post(url: string, body: unknown) {
  const res = await fetch(`${url}/runs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as { error?: string; message?: string; runId?: string } };
}

/** Every job of both queues, by state, and the Redis keys a job of `runId` would have. */
async function jobsOf(runId: string) {
  const redis = new Redis(f.redisUrl);
  const queues = [RUNS_QUEUE, SEGMENTS_QUEUE].map((name) => new Queue(name, { connection: { url: f.redisUrl }, prefix: f.prefix }));
  try {
    const counts = await Promise.all(queues.map((q) => q.getJobCounts()));
    const total = counts.flatMap((c) => Object.values(c)).reduce((a, b) => a + b, 0);
    const keys = [...(await redis.keys(`${f.prefix}:${RUNS_QUEUE}:${runId}*`)), ...(await redis.keys(`${f.prefix}:${SEGMENTS_QUEUE}:${runId}*`))];
    return { total, keys };
  } finally {
    await Promise.all(queues.map((q) => q.close()));
    redis.disconnect();
  }
}

const submission = (runId: string, segmentRows: number) => ({ input: files.input, model: MODEL, out: join(files.dir, 'out'), options: { runId, segmentRows } });

describe('segments per run (MAX_SEGMENTS)', () => {
  it('POST /runs refuses segmentRows 1 on 100k rows with 422 naming segmentRows and the smallest that fits, before any job exists', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const started = performance.now();
    const refused = await post(s.url, submission('too-many', 1));
    const ms = performance.now() - started;
    expect(refused.status).toBe(422);
    expect(refused.json.error).toBe('E_LIMIT');
    expect(refused.json.message).toMatch(/100,000 rows make 100,000 segments of --segment-rows 1, past MAX_SEGMENTS \(10,000\)/);
    expect(refused.json.message).toMatch(/choose a --segment-rows \(segmentRows\) of 10 or more/);
    // The bound is exact: 9 makes 11,112 segments, 10 makes 10,000.
    const nine = await post(s.url, submission('nine', 9));
    expect([nine.status, nine.json.message]).toEqual([422, expect.stringMatching(/11,112 segments.* of 10 or more/)]);
    // No job at all: neither queue holds one, and no key of either run.
    for (const runId of ['too-many', 'nine']) expect(await jobsOf(runId)).toEqual({ total: 0, keys: [] });
    const ten = await post(s.url, submission('ten', 10));
    expect([ten.status, ten.json.runId]).toEqual([201, 'ten']);
    console.log(`POST /runs segmentRows 1 on ${ROWS} rows: 422 in ${Math.round(ms)} ms`);
    expect(await s.stop()).toBe(0);
  });

  it("POST /runs judges a big plain file by a sample of its lines, without planning it for a dry run's budget", async () => {
    await f.setup();
    // By bytes alone (2 a row) 100k rows of ~54 bytes could be 2.7M rows: 540 segments of 5,000,
    // past 100. Planned, the file would pass MAX_DRY_RUN_BYTES and leave the count undecided (logged).
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN, MAX_SEGMENTS: '100', MAX_DRY_RUN_BYTES: '1MiB' });
    const accepted = await post(s.url, submission('sampled', 5_000));
    expect([accepted.status, accepted.json.runId]).toEqual([201, 'sampled']);
    // Its first MiB says about 100k rows, 20 segments: far below the bound, so nothing was planned.
    expect(s.stderr()).not.toContain('segments not counted before queuing');
    // Where the sample says it may pass (segmentRows 1,000: 100 segments), the input is planned as before.
    const near = await post(s.url, submission('near', 1_000));
    expect(near.status).toBe(201);
    expect(s.stderr()).toContain('segments not counted before queuing');
    expect(await s.stop()).toBe(0);
  });

  it('enqueue and score refuse it too, and a worker planning a run job added directly fails it E_LIMIT before adding any segment job', async () => {
    await f.setup();
    const cli = await runCli(['enqueue', files.input, '--model', MODEL, '--out', join(files.dir, 'out'), '--segment-rows', '1', '--run-id', 'cli'], f.env());
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/past MAX_SEGMENTS \(10,000\): choose a --segment-rows \(segmentRows\) of 10 or more.*\[E_LIMIT\]/);
    expect(await jobsOf('cli')).toEqual({ total: 0, keys: [] });
    // score likewise, before its run has a folder.
    const scored = await runCli(['score', files.input, '--model', MODEL, '--out', join(files.dir, 'scored'), '--segment-rows', '1'], f.env());
    expect([scored.code, scored.stderr]).toEqual([1, expect.stringMatching(/of 10 or more, or raise MAX_SEGMENTS \[E_LIMIT\]/)]);
    await expect(stat(join(files.dir, 'scored'))).rejects.toMatchObject({ code: 'ENOENT' });

    // Past the producer's check (a producer of another release, or one that could not count): the worker's planning refuses it.
    await f.queue.enqueue({ input: files.input, model: MODEL, out: join(files.dir, 'out'), options: { runId: 'forged', segmentRows: 1 } });
    f.worker();
    const status = await f.finished('forged');
    expect(status.state).toBe('failed');
    expect(reasonOf(status)).toMatch(/first 10,001 rows already make more than 10,000 segments of --segment-rows 1, past MAX_SEGMENTS \(10,000\)/);
    expect(reasonOf(status)).toMatch(/choose a --segment-rows \(segmentRows\) of at least 2/);
    expect(reasonOf(status)).toMatch(/E_LIMIT/);
    const jobs = await jobsOf('forged');
    expect([jobs.total, jobs.keys.filter((k) => k.includes(`:${SEGMENTS_QUEUE}:`))]).toEqual([1, []]);
  });
});

/** A model service whose describe is the simulator's and whose predict never answers; it records when each held predict's connection closes. */
async function stallingService(simUrl: string): Promise<{ url: string; held: number; closedAt: number[]; server: Server }> {
  const service = { url: '', held: 0, closedAt: [] as number[], server: undefined as unknown as Server };
  service.server = createServer((req, res) => {
    if (req.url?.endsWith('/describe')) {
      const upstream = request(`${simUrl}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
      return;
    }
    service.held++;
    res.on('close', () => service.closedAt.push(performance.now()));
  }).listen(0, '127.0.0.1');
  await once(service.server, 'listening');
  service.url = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`;
  return service;
}

describe("a dry run's work on the server", () => {
  let closeService: (() => void) | undefined;
  afterEach(() => closeService?.());

  it('stops past MAX_DRY_RUN_SECONDS: 422 naming it within a bounded time, its model requests cut', async () => {
    await f.setup();
    const service = await stallingService(f.sim.url);
    closeService = () => service.server.closeAllConnections();
    const s = await serve({ ...f.env(), MODEL_SERVICE_URL: service.url, API_TOKEN: TOKEN, MAX_DRY_RUN_SECONDS: '1' });
    const started = performance.now();
    const answer = await post(s.url, { ...submission('dry-slow', 5000), dryRun: true });
    const answered = performance.now();
    expect(answer.status).toBe(422);
    expect(answer.json.message).toMatch(/this dry run's work on the server .* passes MAX_DRY_RUN_SECONDS \(1 s\)/);
    expect(answered - started).toBeLessThan(4000);
    // The request it held was cut, not left to run on to its 60 s time limit. Its close reaches
    // this server on a socket of its own, which may be read after the answer on another: it is
    // waited for (a few seconds at most, far inside that limit), not assumed to come first.
    expect(service.held).toBeGreaterThan(0);
    await waitFor('every predict request the dry run held to be closed', () => service.closedAt.length === service.held, 5_000);
    expect(Math.max(...service.closedAt) - started).toBeLessThan(10_000);
    await expect(stat(join(files.dir, 'out', 'dry-slow'))).rejects.toMatchObject({ code: 'ENOENT' });
    console.log(`dry run against a stalled predict, MAX_DRY_RUN_SECONDS=1: 422 after ${Math.round(answered - started)} ms`);
    expect(await s.stop()).toBe(0);
  });

  it('stops past MAX_DRY_RUN_BYTES, inflated bytes counted; a segment check it cannot finish leaves the run to its planning', async () => {
    await f.setup();
    const dir = join(files.dir, 'dry-bytes');
    await mkdir(dir, { recursive: true });
    // 5 MiB of rows inflated from a gzip of a few KiB: the compressed bytes alone would pass.
    const gz = join(dir, 'rows.csv.gz');
    await pipeline(
      (function* () {
        yield 'sqft,location\n';
        for (let i = 0; i < 5 * 1024; i++) yield `${'1'.repeat(1018)},good\n`;
      })(),
      createGzip(),
      createWriteStream(gz),
    );
    expect((await stat(gz)).size).toBeLessThan(64 * 1024);
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN, MAX_DRY_RUN_BYTES: '1MiB' });
    for (const input of [files.input, gz]) {
      const answer = await post(s.url, { input, model: MODEL, out: join(dir, 'out'), options: { runId: 'dry-big' }, dryRun: true });
      expect([input, answer.status, answer.json.error]).toEqual([input, 422, 'E_LIMIT']);
      expect(answer.json.message).toMatch(/passes MAX_DRY_RUN_BYTES \(1 MiB\): raise MAX_DRY_RUN_BYTES/);
    }
    expect(await readdir(dir)).toEqual(['rows.csv.gz']);

    // Within 1 MiB, segmentRows 1 passes MAX_SEGMENTS by row 10,001, but its rows cannot all be counted: the least it can tell.
    const early = await post(s.url, submission('early', 1));
    expect([early.status, early.json.message]).toEqual([
      422,
      expect.stringMatching(/first 10,001 rows already make more than 10,000 segments.* of at least 2 /),
    ]);
    // segmentRows 9 would pass it by row 90,001, beyond 1 MiB: undecided, the submission is taken, for the worker's planning to refuse.
    const taken = await post(s.url, submission('uncounted', 9));
    expect([taken.status, taken.json.runId]).toEqual([201, 'uncounted']);
    expect(await s.stop()).toBe(0);
    expect(s.stderr()).toMatch(/MAX_DRY_RUN_BYTES.*segments not counted before queuing/);
  });
});
