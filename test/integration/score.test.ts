import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative as relativePath } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchScorerError } from '../../src/errors.js';
import type { DescribeSnapshot } from '../../src/scoring/describe-snapshot.js';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import { rejection } from '../helpers/rejection.js';
import { expectedRental, parseCsv, parseJsonLines, runFolder, score, startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
const ROWS = 5_000;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, ROWS);
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const failure = (p: Promise<unknown>) => rejection(p, BatchScorerError);

describe('score, end to end against the simulator', () => {
  it("scores every row in order, with the formula's values, input values unchanged, and a complete run folder", async () => {
    const out = join(tmp.dir, 'out-basic');
    const m = await score(input, out, { service: sim.url, segmentRows: 1_200, batchSize: 100, runId: 'basic' });
    const files = await runFolder(out, 'basic');
    expect(Object.keys(files).sort()).toEqual(['_SUCCESS', 'describe.json', 'errors.jsonl', 'manifest.json', 'predictions.csv']);

    const inRows = parseCsv(await readFile(input, 'utf8'));
    const outRows = parseCsv(files['predictions.csv']);
    expect(outRows).toHaveLength(ROWS);
    outRows.forEach((row, i) => {
      for (const [k, v] of Object.entries(inRows[i])) expect(row[k]).toBe(v);
      const e = expectedRental(inRows[i]);
      expect(Number(row.rental_price)).toBe(e.rental_price);
      expect(Number(row.rental_price_confidence)).toBe(e.rental_price_confidence);
      expect(Number(row.rental_price_min)).toBe(e.rental_price_min);
      expect(Number(row.rental_price_max)).toBe(e.rental_price_max);
      expect(row.rental_price_anomaly).toBe('');
    });
    expect(files['predictions.csv'].split('\n')[0]).toBe(
      'listing_id,number_of_rooms,number_of_bathrooms,sqft,location,days_on_market,initial_price,neighborhood,notes,rental_price,rental_price_confidence,rental_price_min,rental_price_max,rental_price_anomaly',
    );

    const manifest = JSON.parse(files['manifest.json']) as Manifest;
    expect(manifest).toMatchObject({ runId: 'basic', state: 'succeeded', model: { project: 'mindsdb', name: 'home_rentals_model', resolvedVersion: 2 } });
    expect(manifest.input.sha256).toBe(sha256(await readFile(input)));
    expect(manifest.input.rows).toBe(ROWS);
    expect(manifest.counts).toMatchObject({ rowsIn: ROWS, rowsScored: ROWS, rowsQuarantined: 0, requests: 50, segments: 5 });
    const predictions = manifest.outputs.find((o) => o.file === 'predictions.csv');
    expect(predictions).toMatchObject({ rows: ROWS, bytes: Buffer.byteLength(files['predictions.csv']), sha256: sha256(files['predictions.csv']) });
    expect(m.runId).toBe('basic');

    const snapshot = JSON.parse(files['describe.json']) as DescribeSnapshot;
    expect(snapshot.answers.map((a) => a.request)).toEqual([{}, { attribute: 'info' }]);
    expect(snapshot.answers[0].response).toHaveProperty([0, 'VERSION'], 2);
    expect(existsSync(join(out, 'basic', '_work'))).toBe(false);
  });

  it('gives byte-identical predictions at concurrency 1 and 8', async () => {
    const out = join(tmp.dir, 'out-conc');
    const one = await score(input, out, { service: sim.url, concurrency: 1, segmentRows: 2_000, batchSize: 100, runId: 'c1' });
    const eight = await score(input, out, { service: sim.url, concurrency: 8, segmentRows: 2_000, batchSize: 100, runId: 'c8' });
    // Keep-alive: connections follow the requests in flight, not the requests made. Describe (twice
    // at a run's start) has a connection of its own each time.
    expect(eight.counts!.requests).toBeGreaterThanOrEqual(50);
    expect(one.counts!.connectionsOpened).toBeLessThanOrEqual(1 + 2);
    expect(eight.counts!.connectionsOpened).toBeGreaterThan(1 + 2);
    expect(eight.counts!.connectionsOpened).toBeLessThanOrEqual(8 + 2);
    expect(eight.concurrency).toEqual({ asked: 8, settled: 8 });
    expect(eight.timings!.scoreMs).toBeGreaterThan(0);
    expect(eight.timings!.planMs + eight.timings!.scoreMs + eight.timings!.assembleMs).toBeLessThanOrEqual(eight.durationMs);
    const a = await readFile(join(out, 'c1', 'predictions.csv'));
    const b = await readFile(join(out, 'c8', 'predictions.csv'));
    expect(a.length).toBeGreaterThan(0);
    expect(sha256(a)).toBe(sha256(b));
  });

  it('gives the same bytes under 5% 500s, 2% 429s, 1% resets, 1% hangs and 1% proxy 503s as a clean run', async () => {
    const faulty = await startSimulator({
      errorRate: 0.05,
      rateLimitRate: 0.02,
      retryAfterSeconds: 0,
      resetRate: 0.01,
      hangRate: 0.01,
      gatewayErrorRate: 0.01,
      seed: 7,
    });
    try {
      const out = join(tmp.dir, 'out-faults');
      await score(input, out, { service: sim.url, batchSize: 50, runId: 'clean' });
      const m = await score(input, out, { service: faulty.url, batchSize: 50, runId: 'faulty', retries: 10, timeout: 1_000 });
      const f = faulty.stats.faults;
      expect([f.error500, f.rateLimited, f.resets, f.hangs, f.gateway].every((n) => n > 0)).toBe(true);
      expect(m.counts!.retries).toBeGreaterThan(0);
      const clean = await readFile(join(out, 'clean', 'predictions.csv'));
      expect(sha256(await readFile(join(out, 'faulty', 'predictions.csv')))).toBe(sha256(clean));
    } finally {
      await faulty.close();
    }
  });

  it('--concurrency auto finds what a server with 3 engine threads sustains, and the output is the same', async () => {
    const busy = await startSimulator({ capacity: 3, latencyMs: 20, retryAfterSeconds: 0 });
    try {
      const out = join(tmp.dir, 'out-auto');
      await score(input, out, { service: sim.url, runId: 'clean', batchSize: 50 });
      const m = await score(input, out, { service: busy.url, runId: 'auto', batchSize: 50, concurrency: 'auto', retries: 10 });
      // It probes past the server's 3 threads (429s) and backs off: a fixed 16 meets several times more.
      expect(busy.stats.overCapacity).toBeGreaterThan(0);
      expect(busy.stats.overCapacity).toBeLessThan(m.counts!.requests / 2);
      // Where it settled is kept: near the server's 3 threads, not at the ceiling of 16.
      expect(m.concurrency!.asked).toBe('auto');
      expect(m.concurrency!.settled).toBeGreaterThanOrEqual(1);
      expect(m.concurrency!.settled).toBeLessThanOrEqual(8);
      expect(sha256(await readFile(join(out, 'auto', 'predictions.csv')))).toBe(sha256(await readFile(join(out, 'clean', 'predictions.csv'))));
    } finally {
      await busy.close();
    }
  });

  it('pins the run to the version describe reports, and honours an explicit version', async () => {
    const out = join(tmp.dir, 'out-version');
    const m = await score(input, out, { service: sim.url, model: 'mindsdb/home_rentals_model.1', runId: 'v1', limit: 10 });
    expect(m.model).toMatchObject({ requestedVersion: 1, resolvedVersion: 1 });
    const rows = parseCsv(await readFile(join(out, 'v1', 'predictions.csv'), 'utf8'));
    expect(rows).toHaveLength(10);
    rows.forEach((r) => expect(Number(r.rental_price)).toBe(expectedRental(r, 1).rental_price));
  });

  it('isolates rows the engine fails on by bisection and quarantines them with their row numbers', async () => {
    // Data rows 10 and 777 (1-based) get a value the simulator's engine fails on.
    const rows = Array.from({ length: ROWS }, (_, i) => rentalRow(i));
    for (const i of [9, 776]) rows[i][4] = '__engine_error__';
    rows[9][RENTAL_COLUMNS.indexOf('notes')] = 'quoted, with "quotes"'; // errors.jsonl re-reads the row's text: its quoting too
    const bad = join(tmp.dir, 'bad-rows.csv');
    await writeFile(bad, [RENTAL_COLUMNS, ...rows].map(csvLine).join(''));
    const out = join(tmp.dir, 'out-bad');
    const m = await score(bad, out, { service: sim.url, batchSize: 200, runId: 'bad' });
    const files = await runFolder(out, 'bad');
    const errors = parseJsonLines(files['errors.jsonl']);
    expect(errors.map((e) => e.row)).toEqual([10, 777]);
    expect(errors[0]).toMatchObject({ status: 500, title: 'MLEngineException', line: 11 });
    expect(errors.map((e) => e.input)).toEqual([9, 776].map((i) => Object.fromEntries(RENTAL_COLUMNS.map((c, j) => [c, rows[i][j]]))));
    expect(m.counts).toMatchObject({ rowsScored: ROWS - 2, rowsQuarantined: 2 });
    expect(m.counts!.splits).toBeGreaterThan(0);
    expect(parseCsv(files['predictions.csv']).map((r) => r.listing_id)).not.toContain('L00000009');
  });

  it('fails when the quarantined share passes --max-error-rate, with a failed manifest and no _SUCCESS', async () => {
    const lines = ['sqft,location', ...Array.from({ length: 100 }, (_, i) => `${i},${i % 10 === 0 ? '__engine_error__' : 'good'}`)];
    const bad = join(tmp.dir, 'many-bad.csv');
    await writeFile(bad, `${lines.join('\n')}\n`);
    const out = join(tmp.dir, 'out-rate');
    const err = await failure(score(bad, out, { service: sim.url, batchSize: 10, maxErrorRate: 0.05, runId: 'rate' }));
    expect(err.code).toBe('E_ERROR_RATE');
    const files = await runFolder(out, 'rate');
    expect(files._SUCCESS).toBeUndefined();
    expect(JSON.parse(files['manifest.json'])).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE' } });
  });

  it('quarantines rows with too many or too few fields with their line', async () => {
    const file = join(tmp.dir, 'ragged.csv');
    await writeFile(file, 'sqft,location,notes\n100,good,a\n200,good\n"multi\nline",good,b\n300,good,c,extra\n400,poor,d\n');
    const out = join(tmp.dir, 'out-ragged');
    const m = await score(file, out, { service: sim.url, runId: 'ragged', maxErrorRate: 0.5 });
    const errors = parseJsonLines(await readFile(join(out, 'ragged', 'errors.jsonl'), 'utf8'));
    expect(errors).toEqual([
      expect.objectContaining({ row: 2, line: 3, input: '200,good', detail: 'line 3: expected 3 fields, found 2' }),
      expect.objectContaining({ row: 4, line: 6, input: '300,good,c,extra', detail: 'line 6: expected 3 fields, found 4' }),
    ]);
    expect(m.counts).toMatchObject({ rowsIn: 5, rowsScored: 3, rowsQuarantined: 2 });
  });

  it('reads JSON Lines and gzip, and writes the same predictions as from CSV', async () => {
    const rows = parseCsv(await readFile(input, 'utf8')).slice(0, 500);
    const jsonl = join(tmp.dir, 'rows.jsonl.gz');
    await writeFile(jsonl, gzipSync(rows.map((r) => JSON.stringify(r)).join('\n') + '\n'));
    const out = join(tmp.dir, 'out-jsonl');
    await score(jsonl, out, { service: sim.url, runId: 'jsonl', segmentRows: 200, format: 'csv', compress: 'none' });
    await score(input, out, { service: sim.url, runId: 'csv', limit: 500 });
    const fromJsonl = await readFile(join(out, 'jsonl', 'predictions.csv'), 'utf8');
    // JSON string values are sent as strings where CSV numbers are sent as numbers, so compare values, not confidences.
    const a = parseCsv(fromJsonl).map((r) => [r.listing_id, r.notes, r.rental_price]);
    const b = parseCsv(await readFile(join(out, 'csv', 'predictions.csv'), 'utf8')).map((r) => [r.listing_id, r.notes, r.rental_price]);
    expect(a).toEqual(b);
    const manifest = JSON.parse(await readFile(join(out, 'jsonl', 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest.input).toMatchObject({ format: 'jsonl', gzip: true, rows: 500 });
  });

  it('writes JSON Lines output with input values as they were and the prediction members', async () => {
    const out = join(tmp.dir, 'out-jsonl-out');
    await score(input, out, { service: sim.url, runId: 'j', limit: 3, format: 'jsonl', explain: true });
    const lines = parseJsonLines(await readFile(join(out, 'j', 'predictions.jsonl'), 'utf8'));
    expect(lines).toHaveLength(3);
    expect(Object.keys(lines[0])).toContain('rental_price_explain');
    expect(typeof lines[0].sqft).toBe('string');
    expect(JSON.parse(lines[0].rental_price_explain as string)).toHaveProperty('predicted_value', lines[0].rental_price);
  });

  it('JSON Lines: keys absent from the first row are still sent, kept, and never overwritten; long ids survive', async () => {
    const file = join(tmp.dir, 'sparse.jsonl');
    const lines = [
      '{"id": 9007199254740993, "sqft": 1375, "location": "poor"}',
      '{"id":9007199254740995,"number_of_rooms":4,"sqft":1375,"location":"poor","rental_price":1234}',
      '{"id":1,"sqft":"900","days_on_market":3, "note":"été"}',
      '{"id":12345678901234567891,"location":"__engine_error__"}',
    ];
    await writeFile(file, `${lines.join('\n')}\n`);
    const out = join(tmp.dir, 'out-sparse');
    const m = await score(file, out, { service: sim.url, runId: 's', maxErrorRate: 0.5 });
    const quarantined = JSON.parse((await readFile(join(out, 's', 'errors.jsonl'), 'utf8')).trim().replace('12345678901234567891', '"exact"')) as Record<
      string,
      unknown
    >;
    expect(quarantined).toMatchObject({ row: 4, line: 4, input: { id: 'exact', location: '__engine_error__' }, title: 'MLEngineException' });
    const written = (await readFile(join(out, 's', 'predictions.jsonl'), 'utf8')).trim().split('\n');
    // Every input value is written back as it was read, the 17-digit ids included.
    written.forEach((line, i) => expect(line.startsWith(lines[i].slice(0, -1))).toBe(true));
    const rows = written.map((l) => JSON.parse(l) as Record<string, unknown>);
    // rental_price is a key of row 2, so the predictions are prefixed for every row.
    expect(rows[1].rental_price).toBe(1234);
    expect(rows[1].pred_rental_price).toBe(expectedRental({ number_of_rooms: '4', sqft: '1375', location: 'poor' }).rental_price);
    expect(m.warnings.join()).toMatch(/pred_rental_price/);
    expect(m.warnings.join()).not.toMatch(/lacks the model's input column\(s\) number_of_rooms/);
  });

  it('JSON Lines: refuses a file whose rows do not share columns (a key per row)', async () => {
    const file = join(tmp.dir, 'keys.jsonl');
    await writeFile(file, Array.from({ length: 10_001 }, (_, i) => JSON.stringify({ sqft: 1, [`k${i}`]: i })).join('\n'));
    const err = await failure(score(file, join(tmp.dir, 'out-keys'), { service: sim.url, runId: 'k' }));
    expect(err.code).toBe('E_INPUT');
    expect(err.message).toMatch(/keys.jsonl: more than 10000 distinct keys by line 10000/);
  });

  it('handles a categorical target: no _min/_max columns', async () => {
    const file = join(tmp.dir, 'churn.csv');
    await writeFile(file, 'customer,tenure_months,plan,monthly_charges\nc1,1,basic,90\nc2,60,pro,20\n');
    const out = join(tmp.dir, 'out-churn');
    await score(file, out, { service: sim.url, runId: 'churn', model: 'mindsdb/customer_churn' });
    const text = await readFile(join(out, 'churn', 'predictions.csv'), 'utf8');
    expect(text.split('\n')[0]).toBe('customer,tenure_months,plan,monthly_charges,churn,churn_confidence,churn_anomaly');
    expect(parseCsv(text).map((r) => r.churn)).toEqual(['yes', 'no']);
  });

  it('renames prediction columns that clash with input columns, the same way every time', async () => {
    const file = join(tmp.dir, 'clash.csv');
    await writeFile(file, 'sqft,location,rental_price\n500,good,1234\n');
    const out = join(tmp.dir, 'out-clash');
    const m = await score(file, out, { service: sim.url, runId: 'clash' });
    const text = await readFile(join(out, 'clash', 'predictions.csv'), 'utf8');
    expect(text.split('\n')[0]).toBe(
      'sqft,location,rental_price,pred_rental_price,pred_rental_price_confidence,pred_rental_price_min,pred_rental_price_max,pred_rental_price_anomaly',
    );
    expect(parseCsv(text)[0].rental_price).toBe('1234');
    expect(m.warnings.join()).toContain('pred_rental_price');
  });

  it('counts interval violations in the manifest', async () => {
    const file = join(tmp.dir, 'intervals.csv');
    await writeFile(file, 'sqft,location\n-5,good\n100,good\n-7,poor\n');
    const m = await score(file, join(tmp.dir, 'out-int'), { service: sim.url, runId: 'int' });
    expect(m.counts!.intervalViolations).toBe(2);
  });

  it('names a model still training or failed on a BYOM server by its status, without asking its info', async () => {
    // MindsDB 26's BYOM engine answers info of such a model with a handler error, [{"error": ...}].
    const byom = await startSimulator({ engine: 'byom' });
    try {
      const training = await failure(
        score(input, join(tmp.dir, 'out-byom-training'), { service: byom.url, model: 'mindsdb/training_model', runId: 'training' }),
      );
      expect([training.code, training.message]).toEqual(['E_MODEL_NOT_READY', expect.stringMatching(/training_model is not ready: status "generating"/)]);
      const failed = await failure(score(input, join(tmp.dir, 'out-byom-failed'), { service: byom.url, model: 'mindsdb/failed_model', runId: 'failed' }));
      expect([failed.code, failed.message]).toEqual(['E_SERVICE_FATAL', expect.stringMatching(/failed_model failed training: /)]);
    } finally {
      await byom.close();
    }
  });

  it('works with an older server whose describe {} answers the info shape and no version', async () => {
    const legacy = await startSimulator({ legacyDescribe: true });
    try {
      const out = join(tmp.dir, 'out-legacy');
      const m = await score(input, out, { service: legacy.url, runId: 'legacy', limit: 50 });
      const snapshot = JSON.parse(await readFile(join(out, 'legacy', 'describe.json'), 'utf8')) as DescribeSnapshot;
      expect(snapshot.answers.map((a) => a.request)).toEqual([{}]);
      expect(m.model).toMatchObject({ resolvedVersion: null });
      expect(m.warnings.join()).toMatch(/not pinned/);
      expect(m.counts!.rowsScored).toBe(50);
    } finally {
      await legacy.close();
    }
  });

  it('proves every answer row by the row id member the server echoes, learnt when planning', async () => {
    for (const member of ['__mindsdb_row_id', '__service_row_id', '__acme_row_id']) {
      const server = await startSimulator({ rowIdMember: member });
      try {
        const m = await score(input, join(tmp.dir, `out-echo${member}`), { service: server.url, runId: 'e', limit: 300, batchSize: 50 });
        expect(m.model).toMatchObject({ rowIdMember: member, rowIdEchoed: true });
        expect(m.counts).toMatchObject({ rowsScored: 300, unechoedRows: 0 });
        expect(m.warnings.join()).not.toMatch(/position/);
      } finally {
        await server.close();
      }
    }
  });

  it('aligns by position, and says so, when the server echoes no row id member', async () => {
    const none = await startSimulator({ rowIdMember: 'none' });
    try {
      const m = await score(input, join(tmp.dir, 'out-unechoed'), { service: none.url, runId: 'u', limit: 100 });
      expect(m.model).toMatchObject({ rowIdMember: null, rowIdEchoed: false });
      expect(m.counts!.unechoedRows).toBe(100);
      expect(m.warnings.join()).toMatch(/echoed none of __mindsdb_row_id, __service_row_id: answer rows are aligned by position alone/);
      // An explicit member wins, echoed or not.
      const forced = await score(input, join(tmp.dir, 'out-forced'), { service: sim.url, runId: 'f', limit: 100, rowIdMember: '__service_row_id' });
      expect(forced.model).toMatchObject({ rowIdMember: '__service_row_id', rowIdEchoed: false });
      expect(forced.counts!.unechoedRows).toBe(100);
      expect(forced.warnings.join()).toMatch(/did not echo __service_row_id/);
    } finally {
      await none.close();
    }
  });

  it('retries answers with a row too few or too many, and the output is byte-identical to a clean run', async () => {
    const faulty = await startSimulator({ shortAnswerRate: 0.05, seed: 7 });
    try {
      const options = { segmentRows: 1_000, batchSize: 50, concurrency: 8 };
      const clean = await score(input, join(tmp.dir, 'out-clean'), { service: sim.url, runId: 'c', ...options });
      const short = await score(input, join(tmp.dir, 'out-short'), { service: faulty.url, runId: 's', ...options });
      expect(faulty.stats.faults.shortAnswers).toBeGreaterThan(0);
      // Every short answer was tried again (the plan's probe request is not in the run's counts).
      expect(short.counts!.retries).toBeGreaterThan(0);
      expect(short.counts!.requests).toBe(clean.counts!.requests);
      const [a, b] = await Promise.all([
        readFile(join(tmp.dir, 'out-clean', 'c', 'predictions.csv')),
        readFile(join(tmp.dir, 'out-short', 's', 'predictions.csv')),
      ]);
      expect(sha256(b)).toBe(sha256(a));
      expect(short.outputs[0].sha256).toBe(clean.outputs[0].sha256);
    } finally {
      await faulty.close();
    }
  });

  it('fails with E_ALIGNMENT, giving the counts, when every answer has the wrong number of rows', async () => {
    const faulty = await startSimulator({ shortAnswerRate: 1 });
    try {
      const err = await failure(score(input, join(tmp.dir, 'out-always-short'), { service: faulty.url, runId: 'a', limit: 10, retries: 2 }));
      expect(err.code).toBe('E_ALIGNMENT');
      expect(err.message).toMatch(/answered 2 rows for 1 sent \(on each of 3 attempts\)/);
    } finally {
      await faulty.close();
    }
  });

  it('treats a header-only file as a successful run of 0 rows', async () => {
    const file = join(tmp.dir, 'header-only.csv');
    await writeFile(file, 'sqft,location\n');
    const out = join(tmp.dir, 'out-empty-ok');
    const m = await score(file, out, { service: sim.url, runId: 'h' });
    expect(m.counts!.rowsIn).toBe(0);
    const files = await runFolder(out, 'h');
    expect(files._SUCCESS).toBe('');
    expect(files['predictions.csv']).toMatch(/^sqft,location,rental_price,/);
  });

  it('resumes a run with the same run id, keeping finished segments, with identical output', async () => {
    const out = join(tmp.dir, 'out-resume');
    const stop = new AbortController();
    // Abort as soon as the first segment is done: a crash in the middle of a run.
    const watcher = setInterval(() => existsSync(join(out, 'r', '_work', 'segments', '00000.done.json')) && stop.abort(), 5);
    const err = await failure(
      score(input, out, { service: sim.url, runId: 'r', segmentRows: 1_000, concurrency: 1, batchSize: 50, signal: stop.signal }),
    ).finally(() => clearInterval(watcher));
    expect(err.code).toBe('E_ABORTED');
    expect(existsSync(join(out, 'r', '_SUCCESS'))).toBe(false);
    const before = sim.stats.predictRows;
    const m = await score(input, out, { service: sim.url, runId: 'r', segmentRows: 1_000, concurrency: 1, batchSize: 50 });
    expect(sim.stats.predictRows - before).toBeLessThan(ROWS);
    expect(m.counts!.rowsScored).toBe(ROWS);
    await score(input, out, { service: sim.url, runId: 'r-clean', segmentRows: 1_000, concurrency: 1, batchSize: 50 });
    expect(sha256(await readFile(join(out, 'r', 'predictions.csv')))).toBe(sha256(await readFile(join(out, 'r-clean', 'predictions.csv'))));
  });

  it("refuses a run id that already succeeded, or that exists with other options, and leaves that run's manifest alone", async () => {
    const out = join(tmp.dir, 'out-exists');
    await score(input, out, { service: sim.url, runId: 'x', limit: 5 });
    const manifest = await readFile(join(out, 'x', 'manifest.json'), 'utf8');
    expect((await failure(score(input, out, { service: sim.url, runId: 'x', limit: 5 }))).code).toBe('E_RUN_EXISTS');
    expect(await readFile(join(out, 'x', 'manifest.json'), 'utf8')).toBe(manifest);

    const bad = join(tmp.dir, 'one-bad.csv');
    await writeFile(bad, 'sqft,location\n1,__engine_error__\n2,good\n');
    expect((await failure(score(bad, out, { service: sim.url, runId: 'y', maxErrorRate: 0 }))).code).toBe('E_ERROR_RATE');
    const failed = await readFile(join(out, 'y', 'manifest.json'), 'utf8');
    const other = await failure(score(bad, out, { service: sim.url, runId: 'y', maxErrorRate: 0, batchSize: 7 }));
    expect(other.code).toBe('E_RUN_EXISTS');
    expect(other.message).toMatch(/this asks --batch-size 7, where the run has 1000/);
    expect(await readFile(join(out, 'y', 'manifest.json'), 'utf8')).toBe(failed);
  });

  it('resumes a run started without --run-id by the id it was given, with the input written another way', async () => {
    const stop = new AbortController();
    const out = join(tmp.dir, 'out-noid');
    const watcher = setInterval(() => {
      const runs = existsSync(out) ? readdirSync(out) : [];
      if (runs.some((r) => existsSync(join(out, r, '_work', 'segments', '00000.done.json')))) stop.abort();
    }, 5);
    await failure(score(input, out, { service: sim.url, segmentRows: 1_000, concurrency: 1, batchSize: 50, signal: stop.signal })).finally(() =>
      clearInterval(watcher),
    );
    const [runId] = readdirSync(out);
    const relative = relativePath(process.cwd(), input);
    const m = await score(relative, out, { service: sim.url, runId, segmentRows: 1_000, concurrency: 1, batchSize: 50 });
    expect(m.counts!.rowsScored).toBe(ROWS);
  });
});

describe('score refuses bad input and configuration with a clear message', () => {
  const cases: { name: string; content?: string | Buffer; model?: string; envelope?: 'array'; code: string; message: RegExp }[] = [
    { name: 'missing.csv', code: 'E_INPUT_NOT_FOUND', message: /missing\.csv/ },
    { name: 'empty.csv', content: '', code: 'E_INPUT', message: /empty.csv: the file is empty/ },
    {
      name: 'quote.csv',
      content: 'sqft,location\n1,good\n2,"open\n3,poor\n',
      code: 'E_INPUT',
      message: /quote.csv: a quoted field opened on line 3 is never closed/,
    },
    {
      name: 'latin1.csv',
      content: Buffer.concat([Buffer.from('sqft,location\n1,caf'), Buffer.from([0xe9]), Buffer.from('\n')]),
      code: 'E_INPUT',
      message: /latin1.csv: not UTF-8: invalid byte at offset 19 \(line 2\)/,
    },
    { name: 'none.csv', content: 'a,b\n1,2\n', code: 'E_COLUMNS', message: /none of the model's input columns \(number_of_rooms/ },
    { name: 'ok.csv', content: 'sqft\n1\n', model: 'mindsdb/nope', code: 'E_MODEL_NOT_FOUND', message: /Model not found/ },
    { name: 'ok.csv', content: 'sqft\n1\n', model: 'nope/home_rentals_model', code: 'E_MODEL_NOT_FOUND', message: /Project not found/ },
    { name: 'ok.csv', content: 'sqft\n1\n', model: 'mindsdb/home_rentals_model.9', code: 'E_MODEL_NOT_FOUND', message: /home_rentals_model\.9/ },
    { name: 'ok.csv', content: 'sqft\n1\n', model: 'mindsdb/training_model', code: 'E_MODEL_NOT_READY', message: /not ready.*training/ },
    { name: 'ok.csv', content: 'sqft\n1\n', model: 'mindsdb/obsolete_model', code: 'E_SERVICE_FATAL', message: /obsolete/ },
    { name: 'ok.csv', content: 'sqft\n1\n', envelope: 'array', code: 'E_WRONG_ENVELOPE', message: /--envelope/ },
    {
      name: 'ts.csv',
      content: 'store,day,sales\na,1,10\na,2,11\n',
      model: 'mindsdb/forecast_model',
      code: 'E_ALIGNMENT',
      message: /forecast_model is a time-series model \(describe's TRAINING_OPTIONS has timeseries_settings\)/,
    },
  ];
  for (const c of cases) {
    it(`${c.name} ${c.model ?? ''} ${c.envelope ?? ''} → ${c.code}`, async () => {
      const file = join(tmp.dir, c.name);
      if (c.content !== undefined) await writeFile(file, c.content);
      const out = join(tmp.dir, `out-bad-${c.code}-${Math.random().toString(16).slice(2)}`);
      const err = await failure(score(file, out, { service: sim.url, model: c.model, envelope: c.envelope === 'array' ? 'array' : undefined, runId: 'bad' }));
      expect(err.code).toBe(c.code);
      expect(err.message).toMatch(c.message);
      expect(existsSync(join(out, 'bad', '_SUCCESS'))).toBe(false);
      // A missing input is refused before the run starts: no run folder. Any later failure is recorded.
      if (c.code === 'E_INPUT_NOT_FOUND') expect(existsSync(join(out, 'bad'))).toBe(false);
      else expect(JSON.parse(await readFile(join(out, 'bad', 'manifest.json'), 'utf8'))).toMatchObject({ state: 'failed', error: { code: c.code } });
    });
  }
});
