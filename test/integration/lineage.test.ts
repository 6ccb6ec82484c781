import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/lineage/run-event.js';
import { LINEAGE_DRAIN_MS } from '../../src/lineage/lineage-listener.js';
import { lineageRunId, wholeRunId } from '../../src/lineage/run-uuid.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { runCli, startCli } from '../helpers/cli.js';
import { startForeignListener } from '../helpers/foreign-listener.js';
import { startLineageReceiver, type LineageReceiver } from '../helpers/lineage-receiver.js';
import { shippedFile } from '../helpers/lineage-schema.js';
import { freePort, useQueueFixture, waitFor } from '../helpers/queue.js';
import { useServeProcesses } from '../helpers/serve.js';
import { startSimulator, tempDir, writeRentals, writeRentalsWithEngineErrors, writeShiftedRentals } from '../helpers/scoring.js';
import type { Simulator } from '../../src/simulator/server.js';

// OpenLineage run events (OPENLINEAGE_URL) from `score` and from real worker processes, received
// by a local lineage server that checks each against OpenLineage's schemas (the RunEvent of spec
// 2-0-2, each standard facet's) and each custom facet against the schema the package ships.

const MODEL = 'mindsdb/home_rentals_model';
const ROWS = 3_000;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
let receiver: LineageReceiver | undefined;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, ROWS);
});
afterAll(() => tmp.cleanup());
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

const manifestOf = async (out: string, runId: string) => JSON.parse(await readFile(join(out, runId, 'manifest.json'), 'utf8')) as Manifest;
const types = (events: RunEvent[]) => events.map((e) => e.eventType);

/** What every run's events share: one run UUID, the run id in the run facet, the job, and valid events. */
function expectOneRun(events: RunEvent[], runId: string, jobName: string): void {
  expect(receiver!.invalid()).toEqual([]);
  expect(new Set(events.map((e) => e.run.runId)).size).toBe(1);
  for (const e of events) {
    expect(e.run.facets.batchScorer).toMatchObject({ runId });
    expect(e.job).toMatchObject({ namespace: 'batch-scorer', name: jobName });
    expect(e.producer).toMatch(/^urn:batch-scorer:\d+\.\d+\.\d+/);
  }
}

describe('lineage events from score', () => {
  let sim: Simulator;
  beforeAll(async () => (sim = await startSimulator()));
  afterAll(() => sim.close());
  const env = (url: string) => ({ MODEL_SERVICE_URL: sim.url, OPENLINEAGE_URL: url });

  it('a run that succeeds sends START then COMPLETE: its input, its outputs with their rows and bytes, the model version', async () => {
    receiver = await startLineageReceiver();
    const out = join(tmp.dir, 'score-ok');
    const apiKey = 'lineage-key-0123456789';
    const r = await runCli(['score', input, '--model', MODEL, '--out', out, '--run-id', 'lin-ok', '--json'], {
      ...env(receiver.url),
      OPENLINEAGE_API_KEY: apiKey,
    });
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(apiKey);
    const manifest = await manifestOf(out, 'lin-ok');
    // Sent before the process exited: nothing is waited for here.
    const events = receiver.events();
    expect(types(events)).toEqual(['START', 'COMPLETE']);
    expect(receiver.listener.requests.map((q) => [q.method, q.url, q.headers['content-type'], q.headers.authorization])).toEqual([
      ['POST', '/api/v1/lineage', 'application/json', `Bearer ${apiKey}`],
      ['POST', '/api/v1/lineage', 'application/json', `Bearer ${apiKey}`],
    ]);
    expectOneRun(events, 'lin-ok', 'mindsdb.home_rentals_model');
    const [start, complete] = events;
    expect(start.eventTime).toBe(manifest.startedAt);
    expect(complete.eventTime).toBe(manifest.finishedAt);
    expect(start.inputs).toEqual([{ namespace: 'file', name: input }]);
    expect(start.outputs).toEqual([]);

    expect(complete.inputs).toMatchObject([
      {
        namespace: 'file',
        name: input,
        inputFacets: { inputStatistics: { rowCount: ROWS, size: manifest.input.size, fileCount: 1 } },
      },
    ]);
    const predictions = manifest.outputs.find((o) => o.file === 'predictions.csv')!;
    const errors = manifest.outputs.find((o) => o.file === 'errors.jsonl')!;
    expect(predictions.rows).toBe(ROWS);
    expect(complete.outputs).toMatchObject([
      {
        namespace: 'file',
        name: join(out, 'lin-ok', 'predictions.csv'),
        outputFacets: { outputStatistics: { rowCount: ROWS, size: predictions.bytes, fileCount: 1 } },
      },
      {
        namespace: 'file',
        name: join(out, 'lin-ok', 'errors.jsonl'),
        outputFacets: { outputStatistics: { rowCount: 0, size: errors.bytes } },
      },
    ]);
    expect(complete.job.facets.batchScorerModel).toMatchObject({ requested: MODEL, project: 'mindsdb', name: 'home_rentals_model', resolvedVersion: 2 });
    expect(start.job.facets.batchScorerModel).toMatchObject({ requested: MODEL, requestedVersion: null });
    expect(start.job.facets.batchScorerModel).not.toHaveProperty('resolvedVersion');
    expect(complete.run.facets.batchScorer).toMatchObject({ folder: join(out, 'lin-ok'), trigger: 'cli', state: 'succeeded' });
    expect(complete.run.facets).not.toHaveProperty('errorMessage');
  });

  it('a run that fails sends START then FAIL with its error', async () => {
    receiver = await startLineageReceiver();
    const out = join(tmp.dir, 'score-fail');
    const r = await runCli(['score', input, '--model', 'mindsdb/no_such_model', '--out', out, '--run-id', 'lin-fail'], env(receiver.url));
    expect(r.code).toBe(2);
    const events = receiver.events();
    expect(types(events)).toEqual(['START', 'FAIL']);
    expectOneRun(events, 'lin-fail', 'mindsdb.no_such_model');
    const manifest = await manifestOf(out, 'lin-fail');
    expect(events[1].run.facets.errorMessage).toMatchObject({ message: `${manifest.error!.code}: ${manifest.error!.message}` });
    expect(events[1].outputs).toEqual([]);
  });

  it('a run that fails on its error threshold sends FAIL naming errors.jsonl, with the rows it holds', async () => {
    receiver = await startLineageReceiver();
    const out = join(tmp.dir, 'score-error-rate');
    const bad = join(tmp.dir, 'engine-errors.csv');
    await writeRentalsWithEngineErrors(bad, 200, (i) => i % 10 === 3);
    const r = await runCli(['score', bad, '--model', MODEL, '--out', out, '--run-id', 'lin-rate', '--max-error-rate', '0'], env(receiver.url));
    expect(r.code).toBe(1);
    const manifest = await manifestOf(out, 'lin-rate');
    expect(manifest.error?.code).toBe('E_ERROR_RATE');
    const events = receiver.events();
    expect(types(events)).toEqual(['START', 'FAIL']);
    expectOneRun(events, 'lin-rate', 'mindsdb.home_rentals_model');
    const errors = await readFile(join(out, 'lin-rate', 'errors.jsonl'));
    const rows = errors.toString('utf8').split('\n').filter(Boolean).length;
    expect(rows).toBeGreaterThan(0);
    expect(manifest.outputs).toMatchObject([{ file: 'errors.jsonl', rows, bytes: errors.length }]);
    expect(events[1].outputs).toEqual([
      {
        namespace: 'file',
        name: join(out, 'lin-rate', 'errors.jsonl'),
        outputFacets: { outputStatistics: expect.objectContaining({ rowCount: rows, size: errors.length, fileCount: 1 }) as unknown },
      },
    ]);
    expect(events[1].run.facets.errorMessage?.message).toMatch(/^E_ERROR_RATE: /);
  });

  it('a run held by its drift gate sends OTHER; accept sends its COMPLETE, reject its FAIL, on the same OpenLineage run', async () => {
    receiver = await startLineageReceiver();
    const out = join(tmp.dir, 'score-held');
    const shifted = join(tmp.dir, 'shifted.csv');
    await writeShiftedRentals(shifted, 300, 3);
    const score = (file: string, runId: string, ...more: string[]) =>
      runCli(['score', file, '--model', MODEL, '--out', out, '--run-id', runId, ...more], env(receiver!.url));
    expect((await score(input, 'lin-base')).code).toBe(0);
    for (const runId of ['lin-held-a', 'lin-held-r']) expect((await score(shifted, runId, '--baseline-run', 'lin-base', '--drift-fail', '0.25')).code).toBe(1);
    expect((await runCli(['accept', 'lin-held-a', '--out', out, '--by', 'ana'], env(receiver.url))).code).toBe(0);
    expect((await runCli(['reject', 'lin-held-r', '--out', out, '--by', 'ana'], env(receiver.url))).code).toBe(0);
    for (const [runId, end, state] of [
      ['lin-held-a', 'COMPLETE', 'succeeded'],
      ['lin-held-r', 'FAIL', 'failed'],
    ]) {
      const events = receiver.events().filter((e) => e.run.facets.batchScorer.runId === runId);
      expect(types(events)).toEqual(['START', 'OTHER', end]);
      expectOneRun(events, runId, 'mindsdb.home_rentals_model');
      expect(events.map((e) => e.run.facets.batchScorer.state)).toEqual([undefined, 'held', state]);
      const manifest = await manifestOf(out, runId);
      expect(events[2].eventTime).toBe((manifest.accepted ?? manifest.rejected)!.at);
      expect(events[2].outputs.map((o) => o.name)).toEqual(manifest.outputs.map((o) => o.location));
    }
  });

  it('an event the lineage server refuses with a 503 is sent again, and the end still comes after the start', async () => {
    let answered = 0;
    receiver = await startLineageReceiver(() => (answered++ === 0 ? 503 : 200));
    const r = await runCli(['score', input, '--model', MODEL, '--out', join(tmp.dir, 'score-retry'), '--run-id', 'lin-retry'], env(receiver.url));
    expect(r.code).toBe(0);
    expect(types(receiver.events())).toEqual(['START', 'START', 'COMPLETE']);
    expect(receiver.listener.requests[0].body).toBe(receiver.listener.requests[1].body);
    expectOneRun(receiver.events(), 'lin-retry', 'mindsdb.home_rentals_model');
  });

  it('a redirect is not followed: each event is sent once, to OPENLINEAGE_URL only, and the host it points to hears nothing', async () => {
    const elsewhere = await startForeignListener(() => 200);
    try {
      receiver = await startLineageReceiver(() => ({ status: 307, headers: { location: `${elsewhere.url}/api/v1/lineage` } }));
      const apiKey = 'lineage-key-redirected-0123';
      const r = await runCli(['score', input, '--model', MODEL, '--out', join(tmp.dir, 'score-redirect'), '--run-id', 'lin-redirect', '--json'], {
        ...env(receiver.url),
        OPENLINEAGE_API_KEY: apiKey,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ runId: 'lin-redirect', state: 'succeeded' });
      // Given up at the redirect: not tried again, not followed.
      expect(types(receiver.events())).toEqual(['START', 'COMPLETE']);
      expect(r.stderr).toContain('the lineage server answered 307 (a redirect, which is not followed)');
      expect(elsewhere.requests).toEqual([]);
      expect(elsewhere.connections()).toBe(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('a lineage server that is down fails nothing: the run succeeds, with a warning', async () => {
    const started = Date.now();
    const r = await runCli(
      ['score', input, '--model', MODEL, '--out', join(tmp.dir, 'score-down'), '--run-id', 'lin-down', '--json'],
      env(`http://127.0.0.1:${await freePort()}`),
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ runId: 'lin-down', state: 'succeeded' });
    // Refused connections: three tries each (0.5 s and 2 s apart), the two events one after the other, cut at the bound.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.stderr).toMatch(/lineage event not delivered|lineage events still unsent at exit/);
  });

  it('a lineage server that never answers delays the exit by the bound at most, after the result is printed', async () => {
    receiver = await startLineageReceiver(() => 'hang');
    const cli = startCli(['score', input, '--model', MODEL, '--out', join(tmp.dir, 'score-hang'), '--run-id', 'lin-hang', '--json'], env(receiver.url));
    await waitFor('the run result', () => cli.stdout().includes('"state":"succeeded"'), 60_000, 10);
    const printed = Date.now();
    expect(await cli.exited).toBe(0);
    const waited = Date.now() - printed;
    expect(waited).toBeGreaterThanOrEqual(LINEAGE_DRAIN_MS - 500);
    expect(waited).toBeLessThan(LINEAGE_DRAIN_MS + 3_000);
    expect(cli.stderr()).toContain('lineage events still unsent at exit: dropped');
    // The START was received (and never answered, perhaps tried again meanwhile); the end waited behind it.
    expect(new Set(types(receiver.events()))).toEqual(new Set(['START']));
  });
});

describe('lineage events from queue workers', () => {
  const f = useQueueFixture();

  it('a queued run sends START then COMPLETE from the worker that ran it', async () => {
    await f.setup();
    receiver = await startLineageReceiver();
    f.worker([], { OPENLINEAGE_URL: receiver.url, OPENLINEAGE_NAMESPACE: 'batch-scorer' });
    const out = join(tmp.dir, 'queue-ok');
    await f.queue.enqueue({ input, model: MODEL, out, options: { runId: 'lq-ok', segmentRows: 1_000 } });
    expect((await f.finished('lq-ok')).state).toBe('succeeded');
    const events = await receiver.runEvents('lq-ok', 2);
    expect(types(events)).toEqual(['START', 'COMPLETE']);
    expectOneRun(events, 'lq-ok', 'mindsdb.home_rentals_model');
    const manifest = await manifestOf(out, 'lq-ok');
    expect(events[1].outputs[0]).toMatchObject({ name: join(out, 'lq-ok', 'predictions.csv'), outputFacets: { outputStatistics: { rowCount: ROWS } } });
    expect(events[1].job.facets.batchScorerModel).toMatchObject({ resolvedVersion: 2 });
    expect(events[1].eventTime).toBe(manifest.finishedAt);
  });

  it('a queued run that fails in a segment sends FAIL from the worker whose segment failed it', async () => {
    await f.setup({ token: 'right-token', latencyMs: 20 });
    receiver = await startLineageReceiver();
    const out = join(tmp.dir, 'queue-segment-fail');
    const good = f.worker(['--segments', '1'], { MODEL_SERVICE_TOKEN: 'right-token', OPENLINEAGE_URL: receiver.url });
    await f.queue.enqueue({ input, model: MODEL, out, options: { runId: 'lq-seg', segmentRows: 500, batchSize: 100 } });
    await waitFor('a segment done', async () => ((await f.queue.get('lq-seg'))?.progress?.segmentsDone ?? 0) >= 1, 30_000);
    good.child.kill('SIGKILL');
    await good.exited;
    // Planned already: this worker takes only segments, which the service refuses (401), failing the run in one.
    f.worker([], { MODEL_SERVICE_TOKEN: 'wrong-token', OPENLINEAGE_URL: receiver.url });
    expect((await f.finished('lq-seg')).state).toBe('failed');
    const events = await receiver.runEvents('lq-seg', 2);
    expect(types(events)).toEqual(['START', 'FAIL']);
    expect(events[1].run.facets.errorMessage?.message).toMatch(/^E_SERVICE_UNAUTHORIZED: /);
  });

  it('a queued run cancelled while it runs sends ABORT', async () => {
    await f.setup({ latencyMs: 40 });
    receiver = await startLineageReceiver();
    f.worker(['--max-in-flight', '1'], { OPENLINEAGE_URL: receiver.url });
    const out = join(tmp.dir, 'queue-cancel');
    await f.queue.enqueue({ input, model: MODEL, out, options: { runId: 'lq-cx', segmentRows: 500, batchSize: 20 } });
    await waitFor('a segment done', async () => ((await f.queue.get('lq-cx'))?.progress?.segmentsDone ?? 0) >= 1, 30_000);
    const cancelled = await runCli(['cancel', 'lq-cx', '--json'], f.env());
    expect(cancelled.code).toBe(0);
    const events = await receiver.runEvents('lq-cx', 2);
    expect(types(events)).toEqual(['START', 'ABORT']);
    expectOneRun(events, 'lq-cx', 'mindsdb.home_rentals_model');
    expect(events[1].run.facets.errorMessage?.message).toMatch(/^E_CANCELLED: /);
    expect(events[1].run.facets.batchScorer).toMatchObject({ state: 'cancelled' });
  });

  const serve = useServeProcesses();

  it('a run capped, capped again, cancelled and completed: four attempts, each one OpenLineage run with one START and one end', async () => {
    await f.setup({ latencyMs: 40 });
    receiver = await startLineageReceiver();
    // PUBLIC_URL names this serve: the custom facets' _schemaURLs are its, and must resolve there.
    const s = await serve(f.env());
    f.worker(['--max-in-flight', '1'], { OPENLINEAGE_URL: receiver.url, PUBLIC_URL: s.url });
    const out = join(tmp.dir, 'queue-story');
    const runId = 'lq-story';
    const folder = join(out, runId);
    const state = async () => (await f.queue.get(runId))?.state;
    // Six segments of 25 batches, one batch at a time: about a second a segment, six for the run.
    await f.queue.enqueue({ input, model: MODEL, out, options: { runId, segmentRows: 500, batchSize: 20, concurrency: 1, maxRequests: 10 } });
    expect((await f.finished(runId)).state).toBe('expired');
    // A cap counts on from the calls sent: 10 more, and it expires again.
    await f.queue.resume(runId, { maxRequests: 20 });
    await waitFor(
      'the second attempt to expire',
      async () => (await manifestOf(out, runId).catch(() => undefined))?.attempt === 2 && (await state()) === 'expired',
      60_000,
    );
    await f.queue.resume(runId);
    await waitFor('a segment of the third attempt done', async () => ((await f.queue.get(runId))?.progress?.segmentsDone ?? 0) >= 1, 30_000);
    expect((await f.queue.cancel(runId)).state).toMatch(/^cancell(ing|ed)$/);
    await waitFor('the third attempt cancelled', async () => (await state()) === 'cancelled', 30_000);
    await f.queue.resume(runId);
    expect((await f.finished(runId)).state).toBe('succeeded');
    expect(await manifestOf(out, runId)).toMatchObject({ state: 'succeeded', attempt: 4 });

    const events = await receiver.runEvents(runId, 8);
    expect(receiver.invalid()).toEqual([]);
    const byRun = new Map<string, RunEvent[]>();
    for (const e of events) byRun.set(e.run.runId, [...(byRun.get(e.run.runId) ?? []), e]);
    expect(byRun.size).toBe(4);
    const attempts = [...byRun.values()].map((of) => {
      expect(of.filter((e) => e.eventType === 'START')).toHaveLength(1);
      expect(of.filter((e) => ['COMPLETE', 'FAIL', 'ABORT'].includes(e.eventType))).toHaveLength(1);
      expect(of).toHaveLength(2);
      const attempt = of[0].run.facets.batchScorer.attempt as number;
      expect(of.map((e) => e.run.facets.batchScorer.attempt)).toEqual([attempt, attempt]);
      expect(of[0].run.runId).toBe(lineageRunId(folder, attempt));
      // Grouped under one parent: the run as a whole.
      for (const e of of) expect(e.run.facets.parent).toMatchObject({ run: { runId: wholeRunId(folder) }, job: { name: 'mindsdb.home_rentals_model' } });
      const end = of.find((e) => e.eventType !== 'START')!;
      return [attempt, end.eventType, end.run.facets.batchScorer.state];
    });
    expect(attempts.sort()).toEqual([
      [1, 'ABORT', 'expired'],
      [2, 'ABORT', 'expired'],
      [3, 'ABORT', 'cancelled'],
      [4, 'COMPLETE', 'succeeded'],
    ]);

    // Every custom facet's _schemaURL is one serve answers: the schema the package ships, against which receiver.invalid() checked it.
    const urls = new Set(events.flatMap((e) => [e.run.facets.batchScorer._schemaURL, e.job.facets.batchScorerModel._schemaURL]));
    expect(urls.size).toBe(2);
    for (const url of urls) {
      expect(url.startsWith(`${s.url}/schemas/openlineage/`)).toBe(true);
      const answer = await fetch(url.replace(/#.*$/, ''));
      expect([answer.status, answer.headers.get('content-type')]).toEqual([200, 'application/schema+json']);
      expect(Buffer.from(await answer.arrayBuffer())).toEqual(await readFile(join(import.meta.dirname, '..', '..', shippedFile(url)!)));
    }
  });
});
