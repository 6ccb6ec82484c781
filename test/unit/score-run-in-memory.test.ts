import { createHash } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { parseRunOptions, type RunOptionsInput } from '../../src/config/run-options.js';
import { BatchScorerError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import { requestValue } from '../../src/scoring/request-row.js';
import type { RunListener } from '../../src/scoring/run-listener.js';
import { scoreRun } from '../../src/scoring/score-run.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import { RENTAL_COLUMNS, rentalsCsv } from '../../src/simulator/sample-data.js';
import { formatLocation, joinLocation, parseLocation } from '../../src/storage/location.js';
import { fakeService } from '../helpers/fake-predictor.js';
import { MemoryStorage } from '../helpers/memory-storage.js';
import { rejection } from '../helpers/rejection.js';
import { expectedRental, parseCsv, parseJsonLines, rentalsText } from '../helpers/scoring.js';

const ROWS = 1_000;
const OUT = '/memory/out';
const INPUT = '/memory/in/rentals.csv';
/** Four segments of six batches or so, two at once: enough to have segments finish out of order. */
const SMALL: RunOptionsInput = { segmentRows: 300, batchSize: 50 };

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A storage holding the rentals input (as sample-data generates it, unless `csv` is given). */
async function storageWith(csv?: string, input = INPUT): Promise<MemoryStorage> {
  const storage = new MemoryStorage();
  await storage.write(parseLocation(input), csv ?? (await text(rentalsCsv(ROWS))));
  return storage;
}

/** Scores `input` into OUT as `score` does, against the fake service. */
function score(
  storage: MemoryStorage,
  runId: string,
  options: RunOptionsInput = {},
  ctx: { service?: ReturnType<typeof fakeService>; signal?: AbortSignal; input?: string; listener?: RunListener } = {},
): Promise<Manifest> {
  const { predictorFor } = ctx.service ?? fakeService();
  return scoreRun(
    { input: ctx.input ?? INPUT, out: OUT, model: 'mindsdb/home_rentals_model', options: parseRunOptions({ runId, ...SMALL, ...options }) },
    { storage, log: silentLogger, predictorFor, signal: ctx.signal, listener: ctx.listener },
  );
}

/** The run folder's files but `_work`, by name. */
async function runFolder(storage: MemoryStorage, runId: string): Promise<Record<string, string>> {
  const folder = joinLocation(parseLocation(OUT), runId);
  const files: Record<string, string> = {};
  for await (const { location } of storage.list(folder)) {
    const name = formatLocation(location).slice(formatLocation(folder).length + 1);
    if (!name.startsWith('_work/')) files[name] = await storage.readText(location);
  }
  return files;
}

/** The names written below a run folder, in the order their writes ended. */
function writesOf(storage: MemoryStorage, runId: string): string[] {
  const folder = `${OUT}/${runId}/`;
  return storage.written.filter((key) => key.startsWith(folder)).map((key) => key.slice(folder.length));
}

const failure = (promise: Promise<unknown>) => rejection(promise, BatchScorerError);

describe('scoreRun with an in-memory storage and a fake model service', () => {
  it('scores a clean CSV run: every row predicted by the model formula, counts and profile right, _SUCCESS last', async () => {
    const storage = await storageWith();
    const service = fakeService();
    const manifest = await score(storage, 'clean', {}, { service });

    const files = await runFolder(storage, 'clean');
    expect(Object.keys(files).sort()).toEqual(['_SUCCESS', 'describe.json', 'errors.jsonl', 'manifest.json', 'predictions.csv']);
    const inRows = parseCsv(await storage.readText(parseLocation(INPUT)));
    const outRows = parseCsv(files['predictions.csv']);
    expect(outRows).toHaveLength(ROWS);
    // One comparison each (not one per row): the inputs carried through, the model's predictions added.
    expect(outRows.map((row) => Object.fromEntries(RENTAL_COLUMNS.map((c) => [c, row[c]])))).toEqual(inRows);
    const predicted = (row: Record<string, unknown>) => [row.rental_price, row.rental_price_confidence, row.rental_price_min, row.rental_price_max].map(Number);
    expect(outRows.map(predicted)).toEqual(inRows.map((row) => predicted(expectedRental(row))));
    expect(files['errors.jsonl']).toBe('');

    expect(JSON.parse(files['manifest.json'])).toMatchObject(JSON.parse(JSON.stringify(manifest)) as object);
    expect(manifest).toMatchObject({
      runId: 'clean',
      state: 'succeeded',
      service: 'fake://model-service',
      model: { resolvedVersion: 2, rowIdMember: '__mindsdb_row_id' },
    });
    expect(manifest.input).toMatchObject({ rows: ROWS, format: 'csv' });
    // 20 batches of 50, in 4 segments (300, 300, 300, 100 rows); no connections in this process.
    expect(manifest.counts).toMatchObject({
      rowsIn: ROWS,
      rowsScored: ROWS,
      rowsQuarantined: 0,
      requests: 20,
      retries: 0,
      splits: 0,
      segments: 4,
      connectionsOpened: 0,
    });
    expect(manifest.outputs.find((o) => o.file === 'predictions.csv')).toMatchObject({ rows: ROWS, sha256: sha256(files['predictions.csv']) });
    // The profile summarises the predictions written.
    const prices = outRows.map((r) => Number(r.rental_price));
    const target = manifest.profile!.targets.find((t) => t.column === 'rental_price')!;
    expect(target).toMatchObject({ target: 'rental_price', kind: 'numeric', count: ROWS, nulls: 0 });
    expect(target.numeric).toMatchObject({ count: ROWS, min: Math.min(...prices), max: Math.max(...prices) });
    expect(target.numeric!.mean).toBeCloseTo(prices.reduce((a, b) => a + b, 0) / ROWS, 6);
    expect(target.numeric!.histogram.reduce((n, bin) => n + bin.count, 0)).toBe(ROWS);
    expect(target.confidence).toMatchObject({ count: ROWS });

    // _SUCCESS after the manifest, and nothing after it; _work removed; the predictor closed.
    const writes = writesOf(storage, 'clean');
    expect(writes.at(-1)).toBe('_SUCCESS');
    expect(writes.indexOf('manifest.json')).toBeLessThan(writes.indexOf('_SUCCESS'));
    expect(storage.keys().filter((k) => k.includes('/_work/'))).toEqual([]);
    // Three predicts plan the run (the row id probe), then 20 score it; describe asked twice at the
    // start, and once at the end for the active version.
    expect(service.stats).toMatchObject({ predictRows: ROWS + 1, describeRequests: 3, made: 1, closed: 1 });
  });

  it('scores JSON Lines input into JSON Lines, with the predictions of the same rows read from CSV', async () => {
    const csv = rentalsText(ROWS);
    const rows = parseCsv(csv);
    // Typed as CSV values are sent (numbers as numbers, empty as null), so that both send the same rows.
    const jsonl = rows.map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).map(([k, v]) => [k, requestValue(v, true)])))).join('\n');
    const storage = await storageWith(`${jsonl}\n`, '/memory/in/rentals.jsonl');
    const manifest = await score(storage, 'jsonl', {}, { input: '/memory/in/rentals.jsonl' });

    const files = await runFolder(storage, 'jsonl');
    expect(manifest.input).toMatchObject({ rows: ROWS, format: 'jsonl' });
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS, segments: 4 });
    const out = parseJsonLines(files['predictions.jsonl']);
    expect(out).toHaveLength(ROWS);
    expect(out.map((row) => [row.listing_id, row.rental_price])).toEqual(rows.map((row) => [row.listing_id, expectedRental(row).rental_price]));
    expect(writesOf(storage, 'jsonl').at(-1)).toBe('_SUCCESS');
  });

  it('quarantines the rows the engine fails on in errors.jsonl, and succeeds within --max-error-rate', async () => {
    // One row in 100 fails the engine: 10 rows, 1% of the file.
    const bad = (i: number) => i % 100 === 7;
    const storage = await storageWith(
      rentalsText(ROWS, (row, i) => {
        if (bad(i)) row.location = ENGINE_ERROR_VALUE;
      }),
    );
    const manifest = await score(storage, 'some-bad', { maxErrorRate: 0.02 });

    const files = await runFolder(storage, 'some-bad');
    const errors = parseJsonLines(files['errors.jsonl']);
    const badRows = Array.from({ length: ROWS }, (_, i) => i).filter(bad);
    expect(errors.map((e) => e.row)).toEqual(badRows.map((i) => i + 1));
    expect(errors.every((e) => e.title === 'MLEngineException' && e.status === 500)).toBe(true);
    expect(errors[0]).toMatchObject({ line: 9, input: { listing_id: 'L00000007', location: ENGINE_ERROR_VALUE } });
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS - 10, rowsQuarantined: 10 });
    expect(manifest.counts!.splits).toBeGreaterThan(0);
    const ids = parseCsv(files['predictions.csv']).map((r) => r.listing_id);
    expect(ids).toHaveLength(ROWS - 10);
    expect(ids).not.toContain('L00000007');
    expect(writesOf(storage, 'some-bad').at(-1)).toBe('_SUCCESS');
  });

  it('tries a failing batch and a refused row twice, the halves between once', async () => {
    // Row 5 of one batch of 8 fails the engine: 8 (twice), 4 + 4, 2 + 2, 1 + 1 (the refused one twice).
    const storage = await storageWith(
      rentalsText(8, (row, i) => {
        if (i === 5) row.location = ENGINE_ERROR_VALUE;
      }),
    );
    const manifest = await score(storage, 'one-bad', { batchSize: 8, maxErrorRate: 0.2 });
    expect(manifest.counts).toMatchObject({ rowsScored: 7, rowsQuarantined: 1, splits: 3, retries: 2 });
  });

  it('fails past --max-error-rate: a failed manifest naming E_ERROR_RATE, no _SUCCESS', async () => {
    const storage = await storageWith(
      rentalsText(ROWS, (row, i) => {
        if (i % 20 === 3) row.location = ENGINE_ERROR_VALUE;
      }),
    );
    const err = await failure(score(storage, 'too-bad', { maxErrorRate: 0.01 }));
    expect(err.code).toBe('E_ERROR_RATE');

    const files = await runFolder(storage, 'too-bad');
    expect(files._SUCCESS).toBeUndefined();
    expect(JSON.parse(files['manifest.json'])).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE' } });
    const quarantined = parseJsonLines(files['errors.jsonl']);
    expect(quarantined.every((e) => (Number(e.row) - 1) % 20 === 3)).toBe(true);
    // The manifest lists errors.jsonl among the folder's files, as a successful run's does.
    expect((JSON.parse(files['manifest.json']) as Manifest).outputs).toEqual([
      {
        file: 'errors.jsonl',
        location: `${OUT}/too-bad/errors.jsonl`,
        rows: quarantined.length,
        bytes: Buffer.byteLength(files['errors.jsonl']),
        sha256: sha256(files['errors.jsonl']),
      },
    ]);
  });

  it('retries overloads within --retries, and gives up with E_SERVICE_UNAVAILABLE past them', async () => {
    const storage = await storageWith();
    // Past the planner's probe and four batches, three overloads in a row: one batch tried four times.
    const patient = fakeService({ overloads: 3, overloadsAfter: 5 });
    const manifest = await score(storage, 'overloaded', { retries: 3 }, { service: patient });
    expect(patient.stats.overloads).toBe(3);
    expect(manifest).toMatchObject({ state: 'succeeded', counts: { rowsScored: ROWS, requests: 20, retries: 3 } });
    expect(parseCsv((await runFolder(storage, 'overloaded'))['predictions.csv'])).toHaveLength(ROWS);

    const hopeless = fakeService({ overloads: 100 });
    const err = await failure(score(storage, 'down', { retries: 2 }, { service: hopeless }));
    expect(err.code).toBe('E_SERVICE_UNAVAILABLE');
    expect(err.message).toMatch(/gave up after 3 attempts/);
    expect(hopeless.stats).toMatchObject({ overloads: 3, closed: 1 });
  });

  it('stopped by a failing write, resumes to the output of a run never stopped', async () => {
    const storage = await storageWith();
    await score(storage, 'whole');
    const whole = await runFolder(storage, 'whole');

    // The third segment's part cannot be written: the run stops with the storage's error.
    storage.failWrites((loc) => formatLocation(loc).endsWith('/stopped/_work/segments/00002.csv'));
    const err = await failure(score(storage, 'stopped'));
    expect(err.code).toBe('E_STORAGE');
    expect(JSON.parse((await runFolder(storage, 'stopped'))['manifest.json'])).toMatchObject({ state: 'failed', error: { code: 'E_STORAGE' } });
    expect(storage.keys()).not.toContain(`${OUT}/stopped/_SUCCESS`);

    storage.failWrites(undefined);
    const service = fakeService();
    const manifest = await score(storage, 'stopped', {}, { service });
    expect(manifest.state).toBe('succeeded');
    // Segments finished before the failure were kept, not scored again.
    expect(service.stats.predictRows).toBeLessThan(ROWS);
    const resumed = await runFolder(storage, 'stopped');
    expect(resumed['predictions.csv']).toBe(whole['predictions.csv']);
    expect(resumed['errors.jsonl']).toBe(whole['errors.jsonl']);
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS, segments: 4 });
  });

  it('stopped by an abort mid-way, resumes to the output of a run never stopped', async () => {
    const storage = await storageWith();
    await score(storage, 'whole');
    const whole = await runFolder(storage, 'whole');

    const stop = new AbortController();
    const aborting = fakeService({ onPredict: ({ number }) => number === 16 && stop.abort() });
    const err = await failure(score(storage, 'aborted', {}, { service: aborting, signal: stop.signal }));
    expect(err.code).toBe('E_ABORTED');
    expect(aborting.stats.closed).toBe(1);
    expect(storage.keys()).not.toContain(`${OUT}/aborted/_SUCCESS`);
    expect(JSON.parse((await runFolder(storage, 'aborted'))['manifest.json'])).toMatchObject({ state: 'failed', error: { code: 'E_ABORTED' } });

    const service = fakeService();
    const manifest = await score(storage, 'aborted', {}, { service });
    // Stopped after 15 batches (two segments scored at once, six batches each): the segments finished by then are kept.
    expect(service.stats.predictRows).toBeLessThan(ROWS);
    expect(manifest).toMatchObject({ state: 'succeeded', counts: { rowsIn: ROWS, rowsScored: ROWS } });
    expect((await runFolder(storage, 'aborted'))['predictions.csv']).toBe(whole['predictions.csv']);
  });

  it('stops at --max-requests, planning and retries counted, keeps every row it scored, and resumes to the same bytes', async () => {
    const storage = await storageWith();
    await score(storage, 'whole');
    const whole = await runFolder(storage, 'whole');

    // One segment at a time: the probe (1), segment 0's six batches, then segment 1's first three; the seventh batch is one retry.
    const capped = fakeService({ overloads: 1, overloadsAfter: 3 });
    const err = await failure(score(storage, 'capped', { maxRequests: 11, segmentsAtOnce: 1 }, { service: capped }));
    expect(err.code).toBe('E_EXPIRED');
    expect(err.message).toBe(
      'run capped expired: --max-requests 11 reached after 11 predict calls; 450 of 1,000 rows scored and kept, 1 of 4 segments finished; resume it with a higher --max-requests (or none)',
    );
    // The batches in flight when the cap was reached are answered: every call taken reached the service.
    expect(capped.stats).toMatchObject({ predictRequests: 11, overloads: 1, closed: 1 });
    const files = await runFolder(storage, 'capped');
    expect(files._SUCCESS).toBeUndefined();
    expect(JSON.parse(files['manifest.json'])).toMatchObject({
      state: 'expired',
      error: { code: 'E_EXPIRED' },
      cap: { kind: 'max-requests', limit: 11, reached: { requests: 11, rowsScored: 450, rowsTotal: ROWS, segmentsDone: 1, segmentsTotal: 4 } },
    });
    // Segment 1 stopped after its first three batches: they are kept as its first piece.
    const segmentFile = (name: string) => storage.readText(parseLocation(`${OUT}/capped/_work/segments/${name}`));
    const first = Buffer.byteLength(await segmentFile('00001.csv'));
    expect(first).toBeGreaterThan(0);
    expect(JSON.parse(await segmentFile('00001.prefix.json'))).toMatchObject({ rowsIn: 150, rowsScored: 150, pieces: 1, bytes: { rows: first } });

    // The caps count the run's earlier attempts: at 11 already, a resume capped at 11 sends nothing.
    const none = fakeService();
    expect((await failure(score(storage, 'capped', { maxRequests: 11 }, { service: none }))).code).toBe('E_EXPIRED');
    expect(none.stats.predictRequests).toBe(0);
    // At 13, it sends two more, segment 1's next two batches, kept as its second piece: every resume makes progress.
    const two = fakeService();
    const again = await failure(score(storage, 'capped', { maxRequests: 13, segmentsAtOnce: 1 }, { service: two }));
    expect(again.message).toContain('; 550 of 1,000 rows scored and kept, 1 of 4 segments finished;');
    expect(two.stats).toMatchObject({ predictRequests: 2, predictRows: 100 });
    const second = Buffer.byteLength(await segmentFile('00001.1.csv'));
    expect(JSON.parse(await segmentFile('00001.prefix.json'))).toMatchObject({ rowsIn: 250, pieces: 2, bytes: { rows: first + second } });

    // Resumed without a cap: uncapped, it scores the rest, no row a second time, to the bytes of a run never stopped.
    const rest = fakeService();
    const manifest = await score(storage, 'capped', {}, { service: rest });
    expect(manifest).toMatchObject({ state: 'succeeded', counts: { rowsIn: ROWS, rowsScored: ROWS } });
    expect(manifest.cap).toBeUndefined();
    expect(rest.stats).toMatchObject({ predictRequests: 9, predictRows: ROWS - 550 });
    const resumed = await runFolder(storage, 'capped');
    expect(resumed['predictions.csv']).toBe(whole['predictions.csv']);
    expect(resumed['errors.jsonl']).toBe(whole['errors.jsonl']);
    // Its profile, inputs too, is the one run never stopped: each piece's rows counted once.
    const wholeManifest = JSON.parse(whole['manifest.json']) as Manifest;
    expect(manifest.profile).toEqual(wholeManifest.profile);
    // Its pieces and prefix markers are removed with the rest of _work.
    expect(storage.keys().filter((key) => key.includes('/capped/_work/segments/'))).toEqual([]);
  });

  it('keeps only the batches answered before one the cap left unanswered, and resumes from there to the same bytes and counts', async () => {
    const storage = await storageWith();
    // A service that echoes no row id: every answer row is counted as aligned by position.
    const echoesNone = { rowIdMember: 'none' };
    const wholeManifest = await score(storage, 'whole', {}, { service: fakeService(echoesNone) });
    const whole = await runFolder(storage, 'whole');

    // The probe, then segment 0's six batches, its third answered 503: its retry waits for the
    // three after it, then is the eighth call, refused by the cap, as the segment's last batch is
    // written.
    const capped = fakeService({ ...echoesNone, overloads: 1, overloadsAfter: 3, retryAfterPredicts: 7 });
    const err = await failure(score(storage, 'gap', { maxRequests: 7, concurrency: 4, segmentsAtOnce: 1 }, { service: capped }));
    expect(err.code).toBe('E_EXPIRED');
    expect(capped.stats).toMatchObject({ predictRequests: 7, overloads: 1, predictRows: 1 + 5 * 50 });
    // Rows 0 to 99 and 150 to 299 were answered, rows 100 to 149 were not: the first 100 are kept.
    expect(err.message).toContain('; 100 of 1,000 rows scored and kept, 0 of 4 segments finished;');

    const rest = fakeService(echoesNone);
    const resumed = await score(storage, 'gap', {}, { service: rest });
    expect(rest.stats.predictRows).toBe(ROWS - 100);
    expect((await runFolder(storage, 'gap'))['predictions.csv']).toBe(whole['predictions.csv']);
    // The batches answered past the gap counted nothing: the counts are those of a run never stopped.
    expect(resumed.counts).toEqual(wholeManifest.counts);
    expect(resumed.counts).toMatchObject({ requests: 20, retries: 0, unechoedRows: ROWS });
  });

  it('stops at --max-rows (rows sent, not read) and at a --deadline already past, and resumes to the same bytes', async () => {
    const storage = await storageWith();
    await score(storage, 'whole');
    const whole = await runFolder(storage, 'whole');

    const rows = fakeService();
    const err = await failure(score(storage, 'rows', { maxRows: 420, segmentsAtOnce: 1 }, { service: rows }));
    expect(err.message).toMatch(/^run rows expired: --max-rows 420 reached after 401 rows sent; 400 of 1,000 rows scored and kept, 1 of 4 segments finished/);
    // The probe's row, then eight batches of 50: a ninth would go past 420.
    expect(rows.stats.predictRows).toBe(1 + 400);
    expect(JSON.parse((await runFolder(storage, 'rows'))['manifest.json'])).toMatchObject({
      state: 'expired',
      cap: { kind: 'max-rows', limit: 420, reached: { requests: 9, rowsSent: 401, rowsScored: 400, segmentsDone: 1 } },
    });
    await score(storage, 'rows');
    expect((await runFolder(storage, 'rows'))['predictions.csv']).toBe(whole['predictions.csv']);

    // Past at the start: planning's probe is refused, nothing is sent.
    const late = fakeService();
    const past = await failure(score(storage, 'late', { deadline: '2020-01-01T00:00:00Z' }, { service: late }));
    expect(past.message).toMatch(
      /^run late expired: --deadline 2020-01-01T00:00:00.000Z passed after 0 predict calls; .* resume it with a later --deadline \(or none\)$/,
    );
    expect(late.stats.predictRequests).toBe(0);
    expect(JSON.parse((await runFolder(storage, 'late'))['manifest.json'])).toMatchObject({
      state: 'expired',
      cap: { kind: 'deadline', limit: '2020-01-01T00:00:00.000Z' },
    });
    await score(storage, 'late', { deadline: '1h' });
    expect((await runFolder(storage, 'late'))['predictions.csv']).toBe(whole['predictions.csv']);
  });

  it('measures drift from a baseline run: the same input again is ok, a shifted column fails the run with E_DRIFT', async () => {
    const storage = await storageWith();
    const base = await score(storage, 'base');
    expect(base.drift).toBeNull();

    const again = await score(storage, 'again', { baselineRun: 'base', driftFail: 0.25 });
    expect(again.drift).toMatchObject({ baseline: { runId: 'base', chosen: 'named' }, level: 'ok', moved: [], thresholds: { warn: 0.1, fail: 0.25 } });
    expect(again.drift!.columns.map((c) => c.column)).toEqual(expect.arrayContaining(['rental_price', 'sqft', 'location']));
    for (const c of again.drift!.columns) expect(c.psi, c.column).toBe(0);
    expect(writesOf(storage, 'again').at(-1)).toBe('_SUCCESS');

    // Every sqft half again as large: sqft moves, and the price the model derives from it.
    const shifted = '/memory/in/shifted.csv';
    await storage.write(
      parseLocation(shifted),
      rentalsText(ROWS, (row) => {
        row.sqft = String(Math.round(Number(row.sqft) * 1.5));
      }),
    );
    const err = await failure(score(storage, 'shifted', { baselineRun: 'base', driftFail: 0.25 }, { input: shifted }));
    expect(err.code).toBe('E_DRIFT');
    expect(err.message).toMatch(/sqft \(PSI \d/);
    const files = await runFolder(storage, 'shifted');
    const manifest = JSON.parse(files['manifest.json']) as Manifest;
    expect(manifest).toMatchObject({ state: 'held', error: { code: 'E_DRIFT' }, drift: { level: 'fail' } });
    expect(manifest.drift!.moved[0]).toBe('sqft');
    expect(manifest.drift!.moved).not.toContain('location');
    // Written, but not presented as complete.
    expect(files['predictions.csv']).toBeDefined();
    expect(files._SUCCESS).toBeUndefined();
  });

  it('tells its listener the run started once its folder is claimed, and ended with the manifest it wrote, drift included', async () => {
    const storage = await storageWith();
    const heard: string[] = [];
    const ended: Manifest[] = [];
    const listener: RunListener = {
      runStarted: (start) => heard.push(`started ${start.runId} ${formatLocation(start.folder)} ${start.request.options.runId}`),
      runEnded: (manifest) => {
        heard.push(`ended ${manifest.runId} ${manifest.state}`);
        ended.push(manifest);
      },
    };
    await score(storage, 'told', {}, { listener });
    expect(heard).toEqual([`started told ${OUT}/told told`, 'ended told succeeded']);
    // As written, but for the schema version every run file is stamped with.
    const { schemaVersion, ...written } = JSON.parse((await runFolder(storage, 'told'))['manifest.json']) as Record<string, unknown>;
    expect(schemaVersion).toBe(2);
    expect(ended[0]).toEqual(written);

    // A run failed by its drift gate: the manifest heard is the one finishRun wrote, with the drift.
    heard.length = 0;
    const shifted = '/memory/in/shifted.csv';
    await storage.write(
      parseLocation(shifted),
      rentalsText(ROWS, (row) => void (row.sqft = String(Math.round(Number(row.sqft) * 1.5)))),
    );
    await failure(score(storage, 'told-drift', { baselineRun: 'told', driftFail: 0.25 }, { input: shifted, listener }));
    expect(heard).toEqual([`started told-drift ${OUT}/told-drift told-drift`, 'ended told-drift held']);
    expect(ended[1]).toMatchObject({ error: { code: 'E_DRIFT' }, drift: { level: 'fail' } });
    expect(ended[1].drift!.moved[0]).toBe('sqft');

    // A run stopped on a cap ends expired, with the cap it reached.
    heard.length = 0;
    await failure(score(storage, 'told-capped', { maxRequests: 11 }, { listener }));
    expect(heard).toEqual([`started told-capped ${OUT}/told-capped told-capped`, 'ended told-capped expired']);
    expect(ended[2]).toMatchObject({ error: { code: 'E_EXPIRED' }, cap: { kind: 'max-requests', limit: 11 } });
  });
});
