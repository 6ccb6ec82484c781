import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PARAMS_DEPTH } from '../../src/config/run-options.js';
import { MAX_ROW_DEPTH } from '../../src/formats/row-parser.js';
import { redisConnection, RUNS_QUEUE } from '../../src/queue/queues.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { freePort, startRedis, useQueueFixture, waitFor, reasonOf } from '../helpers/queue.js';
import { tempDir } from '../helpers/scoring.js';
import { useServeProcesses, type ServeProcess } from '../helpers/serve.js';

/**
 * Issue 21, items 4 and 5, replayed against a real `serve`, a real worker process, Redis and the
 * simulator: a 50 MB header line costs Redis, the API, the run page and the logs no more than
 * any failure; params nested too deep are a 400 naming them (or, put on Redis by another
 * producer, fail in the worker at once); a JSON Lines row nested too deep is quarantined.
 */

const TOKEN = 'tok-bounded-5e0c9a2f71d4';
const bearer = { authorization: `Bearer ${TOKEN}` };
const MODEL = 'mindsdb/home_rentals_model';
const KiB = 1024;
/** What no API answer and no log line may exceed. */
const ANSWER_BOUND = 16 * KiB;

let tmp: Awaited<ReturnType<typeof tempDir>>;
beforeAll(async () => {
  tmp = await tempDir();
});
afterAll(() => tmp.cleanup());

const f = useQueueFixture();
const serve = useServeProcesses();

async function call(url: string, init: { method?: string; body?: string | object } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...bearer, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    json: res.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}

/** Waits for a run to end, through the API, and answers its detail. */
function ended(s: ServeProcess, runId: string) {
  return waitFor(
    `run ${runId} to end`,
    async () => {
      const r = await call(`${s.url}/runs/${runId}`);
      return r.json?.state === 'succeeded' || r.json?.state === 'failed' ? r : undefined;
    },
    90_000,
  );
}

/** Every line of a process's stderr (its JSON log lines) is under the bound. */
function expectLogLinesBounded(what: string, log: string): void {
  const longest = Math.max(0, ...log.split('\n').map((line) => Buffer.byteLength(line)));
  expect(longest, `the longest log line of ${what}`).toBeLessThan(ANSWER_BOUND);
}

/** Bytes of data Redis holds, as `INFO memory` says. */
async function usedMemory(url: string): Promise<number> {
  const redis = new Redis(url);
  try {
    return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
  } finally {
    redis.disconnect();
  }
}

/** Bytes the keys under a queue prefix take, as `MEMORY USAGE` counts them (data and its overhead). */
async function prefixBytes(url: string, prefix: string): Promise<number> {
  const redis = new Redis(url);
  try {
    let bytes = 0;
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) {
      for (const key of keys) bytes += (await redis.memory('USAGE', key)) ?? 0;
    }
    return bytes;
  } finally {
    redis.disconnect();
  }
}

/** `[[…]]` nested so that an object holding it as a member is `levels` deep. */
const nestedJson = (levels: number) => `${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}`;

describe('a 50 MB header line', () => {
  it('grows Redis by less than 1 MB, and no answer, page or log line beyond 16 KiB', async () => {
    // A Redis of the test's own: other suites on the shared one would move its memory under the measurement.
    const port = await freePort();
    const redis = await startRedis(port, tmp.dir);
    try {
      await measureWideHeader(`redis://127.0.0.1:${port}`);
    } finally {
      // The fixture's queue first: it would wait for a Redis that is gone.
      await f.queue?.close();
      redis.kill('SIGKILL');
    }
  }, 180_000);
});

/** The probe of the 50 MB header line, on a Redis nothing else uses. */
async function measureWideHeader(redisUrl: string): Promise<void> {
  await f.setup({}, redisUrl);
  const input = join(tmp.dir, 'wide-header.csv');
  const file = await open(input, 'w');
  const chunk = Buffer.alloc(1024 * KiB, 'h');
  for (let i = 0; i < 50; i++) await file.write(chunk);
  await file.write(`\n${csvLine(rentalRow(0).map(String))}`);
  await file.close();

  // Bounds raised past the header, whose columns the run must then refuse, quoting them.
  const worker = f.worker([], { MAX_FIELD_BYTES: '64MiB', MAX_ROW_BYTES: '64MiB' });
  const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
  const before = await usedMemory(redisUrl);
  const posted = await call(`${s.url}/runs`, { method: 'POST', body: { input, model: MODEL, out: join(tmp.dir, 'out'), options: { runId: 'wide-header' } } });
  expect(posted.status).toBe(201);
  const detail = await ended(s, 'wide-header');
  const after = await usedMemory(redisUrl);

  expect(detail.json).toMatchObject({ state: 'failed', attempts: 1 });
  expect(after - before, 'Redis growth in bytes').toBeLessThan(1024 * KiB);
  // The run's own keys, free of what Redis allocates for connections and scripts meanwhile: a few KiB.
  expect(await prefixBytes(redisUrl, f.prefix), "the run's keys in bytes").toBeLessThan(64 * KiB);
  const reason = String(reasonOf(detail.json));
  expect(reason).toMatch(/has none of the model's input columns .*; its columns are h+\.\.\. \d+ more bytes \[E_COLUMNS\]$/);
  expect(Buffer.byteLength(detail.text), 'GET /runs/:id').toBeLessThan(ANSWER_BOUND);
  expect((detail.json?.manifest as { error: { message: string } }).error.message).toMatch(/\.\.\. \d+ more bytes$/);

  const list = await call(`${s.url}/runs`);
  expect(list.status).toBe(200);
  expect(list.text).toContain('wide-header');
  expect(Buffer.byteLength(list.text), 'GET /runs').toBeLessThan(ANSWER_BOUND);

  const page = await call(`${s.url}/ui/runs/wide-header`);
  expect(page.status).toBe(200);
  expect(page.text).toContain('more bytes');
  expect(Buffer.byteLength(page.text), 'the run page').toBeLessThan(ANSWER_BOUND);

  const manifest = await readFile(join(tmp.dir, 'out', 'wide-header', 'manifest.json'), 'utf8');
  expect(Buffer.byteLength(manifest), 'manifest.json').toBeLessThan(ANSWER_BOUND);

  await s.stop();
  worker.child.kill('SIGTERM');
  await worker.exited;
  expect(worker.log()).toContain('job failed');
  expectLogLinesBounded('the worker', worker.log());
  expectLogLinesBounded('serve', s.stderr());
}

describe('requests made of input', () => {
  it('are answered and logged in under 16 KiB: thousands of bad fields, long field names, a long path', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const fields = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`field-${i}`, i]));
    const many = await call(`${s.url}/runs`, { method: 'POST', body: fields });
    expect(many.status).toBe(400);
    expect(Buffer.byteLength(many.text)).toBeLessThan(ANSWER_BOUND);
    const issues = many.json?.issues as { field: string; message: string }[];
    expect(issues).toHaveLength(21);
    expect(issues[20]).toEqual({ field: '…', message: expect.stringMatching(/^\d+ more issues: fix the ones above first$/) as string });

    const long = await call(`${s.url}/runs`, { method: 'POST', body: { [`x${'y'.repeat(60 * KiB)}`]: 1 } });
    expect(long.status).toBe(400);
    expect(Buffer.byteLength(long.text)).toBeLessThan(4 * KiB);
    expect(long.text).toContain('more bytes');

    const path = await call(`${s.url}/${'p'.repeat(12 * KiB)}`);
    expect(path.status).toBe(404);
    expect(Buffer.byteLength(path.text)).toBeLessThan(4 * KiB);
    expect(path.text).toContain('more bytes');
    await s.stop();
    expectLogLinesBounded('serve', s.stderr());
    // The long path was logged, cut.
    expect(s.stderr()).toMatch(/"url":"\/p+\.\.\. \d+ more bytes"/);
  });
});

describe('params nested too deep', () => {
  it.each([1_500, 6_000])('are refused with 400 naming options.params at %i levels', async (levels) => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const body = `{"input":${JSON.stringify(join(tmp.dir, 'in.csv'))},"model":"${MODEL}","out":${JSON.stringify(tmp.dir)},"options":{"params":{"p":${nestedJson(levels)}}}}`;
    const posted = await call(`${s.url}/runs`, { method: 'POST', body });
    expect(posted.status).toBe(400);
    expect(posted.json).toMatchObject({
      error: 'E_USAGE',
      issues: [{ field: 'options.params', message: `must nest at most ${MAX_PARAMS_DEPTH} levels deep (the params object is one)` }],
    });
    expect((await call(`${s.url}/runs`)).json).toEqual({ runs: [] });
  });

  it('are a 400 too when nested as deep as the body limit allows, in params or anywhere else', async () => {
    await f.setup();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const deep = nestedJson(30_000);
    const fields = `"input":${JSON.stringify(join(tmp.dir, 'in.csv'))},"model":"${MODEL}","out":${JSON.stringify(tmp.dir)}`;
    const bodies = {
      'options.params': `{${fields},"options":{"params":{"p":${deep}}}}`,
      input: `{"input":${deep},"model":"${MODEL}","out":"/tmp"}`,
      surprise: `{${fields},"surprise":${deep}}`,
      'options.keepColumns.0': `{${fields},"options":{"keepColumns":${deep}}}`,
      body: deep,
    };
    for (const [field, body] of Object.entries(bodies)) {
      const posted = await call(`${s.url}/runs`, { method: 'POST', body });
      expect([posted.status, posted.json?.error], field).toEqual([400, 'E_USAGE']);
      expect((posted.json?.issues as { field: string }[])[0].field, field).toBe(field);
    }
    expect((await call(`${s.url}/runs`)).json).toEqual({ runs: [] });
    expectLogLinesBounded('serve', s.stderr());
  });

  it('fail a job another producer put on Redis at once, as E_USAGE, without retries', async () => {
    await f.setup();
    f.worker();
    const connection = redisConnection({ redisUrl: f.redisUrl, prefix: f.prefix }, 'producer');
    const queue = new Queue(RUNS_QUEUE, { connection, prefix: f.prefix });
    try {
      const params = JSON.parse(`{"p":${nestedJson(1_500)}}`) as Record<string, unknown>;
      const request = { input: join(tmp.dir, 'in.csv'), model: MODEL, out: tmp.dir, options: { runId: 'deep-params', params } };
      await queue.add('run', { runId: 'deep-params', request }, { jobId: 'deep-params', attempts: 5, backoff: { type: 'fixed', delay: 100 } });
      const status = await f.finished('deep-params', 30_000);
      expect(status).toMatchObject({ state: 'failed', attempts: 1 });
      expect(status.failedReason).toContain(`params: must nest at most ${MAX_PARAMS_DEPTH} levels deep`);
      expect(status.failedReason).toMatch(/\[E_USAGE\]$/);
    } finally {
      await queue.close();
      await connection.close();
    }
  });
});

describe('a JSON Lines row nested too deep', () => {
  it('is quarantined naming its line, and the run completes', async () => {
    await f.setup();
    f.worker();
    const s = await serve({ ...f.env(), API_TOKEN: TOKEN });
    const input = join(tmp.dir, 'deep-row.jsonl');
    const rows = Array.from({ length: 20 }, (_, i) => JSON.stringify(Object.fromEntries(RENTAL_COLUMNS.map((c, k) => [c, rentalRow(i)[k]]))));
    rows[12] = `{"number_of_rooms":2,"notes":${nestedJson(200_000)}}`;
    await writeFile(input, `${rows.join('\n')}\n`);
    const out = join(tmp.dir, 'deep-out');
    const posted = await call(`${s.url}/runs`, { method: 'POST', body: { input, model: MODEL, out, options: { runId: 'deep-row', maxErrorRate: 0.1 } } });
    expect(posted.status).toBe(201);
    const detail = await ended(s, 'deep-row');
    expect(detail.json).toMatchObject({ state: 'succeeded', manifest: { counts: { rowsIn: 20, rowsScored: 19, rowsQuarantined: 1 } } });
    const errors = (await readFile(join(out, 'deep-row', 'errors.jsonl'), 'utf8')).trim().split('\n');
    expect(errors).toHaveLength(1);
    const quarantined = JSON.parse(errors[0]) as Record<string, unknown>;
    expect(quarantined).toMatchObject({ row: 13, line: 13, detail: `line 13: nested more than ${MAX_ROW_DEPTH} levels deep; flatten the row` });
    // The row itself stays whole in errors.jsonl: that file is output data.
    expect(quarantined.input).toBe(rows[12]);
    expect(Buffer.byteLength(detail.text)).toBeLessThan(ANSWER_BOUND);
  });
});
