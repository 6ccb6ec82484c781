import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { csvLine, RENTAL_COLUMNS, rentalRow } from '../../src/simulator/sample-data.js';
import type { SimulatorOptions } from '../../src/simulator/options.js';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

// The failure paths of issue "never leave a user guessing", through the real CLI against the
// simulator as a real HTTP server.

let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
const sims: Simulator[] = [];
const ROWS = 3_000;

beforeAll(async () => {
  tmp = await tempDir();
  input = join(tmp.dir, 'rentals.csv');
  await writeRentals(input, ROWS);
});
afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
  await tmp.cleanup();
});

async function simulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const sim = await startSimulator(options);
  sims.push(sim);
  return sim;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const manifestOf = async (folder: string) => JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
const score = (sim: Simulator, args: string[]) =>
  runCli(['score', ...args, '--model', 'mindsdb/home_rentals_model', '--json'], { MODEL_SERVICE_URL: sim.url, LOG_LEVEL: 'warn' });

describe('alignment against real servers, by default', () => {
  for (const member of ['__mindsdb_row_id', '__service_row_id']) {
    it(`proves every answer row by ${member} when the server echoes it`, async () => {
      const sim = await simulator({ rowIdMember: member });
      const out = join(tmp.dir, `echo${member}`);
      const r = await score(sim, [input, '--out', out, '--run-id', 'r', '--batch-size', '100']);
      expect(r.code).toBe(0);
      const m = await manifestOf(join(out, 'r'));
      expect(m.model).toMatchObject({ rowIdMember: member, rowIdEchoed: true });
      // Each answer row was checked against the id sent with it; none aligned by position.
      expect(m.counts).toMatchObject({ rowsScored: ROWS, unechoedRows: 0 });
      expect(sim.stats.predictRows).toBeGreaterThanOrEqual(ROWS);
    });
  }

  it('scores byte-identical output under 5% short answers', async () => {
    const clean = await simulator();
    const faulty = await simulator({ shortAnswerRate: 0.05, seed: 11 });
    const args = ['--batch-size', '50', '--segment-rows', '700', '--concurrency', '8'];
    const a = await score(clean, [input, '--out', join(tmp.dir, 'clean'), '--run-id', 'c', ...args]);
    const b = await score(faulty, [input, '--out', join(tmp.dir, 'short'), '--run-id', 's', ...args]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(faulty.stats.faults.shortAnswers).toBeGreaterThan(2);
    const [x, y] = await Promise.all([readFile(join(tmp.dir, 'clean', 'c', 'predictions.csv')), readFile(join(tmp.dir, 'short', 's', 'predictions.csv'))]);
    expect(sha256(y)).toBe(sha256(x));
    expect((await manifestOf(join(tmp.dir, 'short', 's'))).counts!.retries).toBeGreaterThan(0);
  });
});

describe('a run failing on its error threshold', () => {
  it('keeps its quarantined rows, names its run id, and resumes with a higher --max-error-rate to a byte-identical result', async () => {
    const sim = await simulator();
    // One row in 100 makes the engine fail: 15 rows quarantined, 1% of the file.
    const bad = join(tmp.dir, 'some-bad.csv');
    const lines = [csvLine(RENTAL_COLUMNS)];
    for (let i = 0; i < 1_500; i++) {
      const row = rentalRow(i);
      if (i % 100 === 7) row[RENTAL_COLUMNS.indexOf('location')] = '__engine_error__';
      lines.push(csvLine(row));
    }
    await writeFile(bad, `${lines.join('\n')}\n`);
    const out = join(tmp.dir, 'threshold');
    const args = ['--out', out, '--batch-size', '20', '--segment-rows', '300'];

    const failed = await score(sim, [bad, ...args, '--run-id', 't', '--max-error-rate', '0.001']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/\[E_ERROR_RATE\]/);
    expect(failed.stderr).toContain(`run t failed`);
    expect(failed.stderr).toContain(`run folder: ${join(out, 't')}; resume: batch-scorer score`);
    const summary = JSON.parse(failed.stdout.trim().split('\n').at(-1)!) as { state: string; error: { code: string } };
    expect(summary).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE' } });
    expect(existsSync(join(out, 't', '_SUCCESS'))).toBe(false);
    expect((await manifestOf(join(out, 't'))).error?.code).toBe('E_ERROR_RATE');
    // The rows that made it fail are in the run folder, in input order.
    const kept = (await readFile(join(out, 't', 'errors.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { row: number; title: string });
    // More than the one row --max-error-rate 0.001 allows: at least the rows that made it fail.
    expect(kept.length).toBeGreaterThanOrEqual(2);
    expect(kept.map((e) => e.row)).toEqual([...kept.map((e) => e.row)].sort((p, q) => p - q));
    expect(kept.every((e) => (e.row - 1) % 100 === 7 && e.title === 'MLEngineException')).toBe(true);

    // An option that changes the output is refused, naming it; one that does not is taken.
    const other = await score(sim, [bad, ...args, '--run-id', 't', '--max-error-rate', '0.05', '--batch-size', '10']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/--batch-size 10, where the run has 20.*\[E_RUN_EXISTS\]/);
    const resumed = await score(sim, [bad, ...args, '--run-id', 't', '--max-error-rate', '0.05', '--concurrency', '8']);
    expect(resumed.code).toBe(0);
    const direct = await score(sim, [bad, ...args, '--run-id', 'd', '--max-error-rate', '0.05']);
    expect(direct.code).toBe(0);
    for (const file of ['predictions.csv', 'errors.jsonl']) {
      const [x, y] = await Promise.all([readFile(join(out, 't', file)), readFile(join(out, 'd', file))]);
      expect(sha256(x)).toBe(sha256(y));
    }
    const m = await manifestOf(join(out, 't'));
    expect(m).toMatchObject({ state: 'succeeded', counts: { rowsQuarantined: 15 }, options: { maxErrorRate: 0.05, concurrency: 8 } });
  });
});

describe('a model retrained during a run, on a server without versions', () => {
  const versionless = { legacyDescribe: true, retrainAfterPredicts: 20 };
  const args = (out: string) => [input, '--out', out, '--run-id', 'm', '--batch-size', '50', '--concurrency', '1'];

  it('fails the run with E_MODEL_CHANGED, naming what changed, and the manifest says so', async () => {
    const sim = await simulator(versionless);
    const out = join(tmp.dir, 'changed');
    const r = await score(sim, args(out));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/model mindsdb\/home_rentals_model changed during the run: describe now differs in accuracies.*\[E_MODEL_CHANGED\]/);
    const m = await manifestOf(join(out, 'm'));
    expect(m).toMatchObject({ state: 'failed', error: { code: 'E_MODEL_CHANGED' }, model: { resolvedVersion: null } });
    expect(existsSync(join(out, 'm', '_SUCCESS'))).toBe(false);
  });

  it('warns instead with --on-model-change warn', async () => {
    const sim = await simulator(versionless);
    const out = join(tmp.dir, 'changed-warn');
    const r = await score(sim, [...args(out), '--on-model-change', 'warn']);
    expect(r.code).toBe(0);
    const m = await manifestOf(join(out, 'm'));
    expect(m.state).toBe('succeeded');
    expect(m.warnings.join('\n')).toMatch(/changed during the run: describe now differs in accuracies/);
  });

  it('stays pinned where the server reports versions, and warns that another version became active', async () => {
    const sim = await simulator({ retrainAfterPredicts: 20 });
    const out = join(tmp.dir, 'pinned');
    const r = await score(sim, args(out));
    expect(r.code).toBe(0);
    const m = await manifestOf(join(out, 'm'));
    expect(m).toMatchObject({ state: 'succeeded', model: { resolvedVersion: 2 } });
    // Describe is asked once more at the end, for the active version only: the run's is pinned.
    expect(sim.stats.describeRequests).toBe(3);
    expect(m.warnings).toContain(
      "model mindsdb/home_rentals_model got a new active version during the run: version 3 is active now; the run stayed pinned to version 2, active when it started, and every row is version 2's answer (score again for version 3's)",
    );
  });

  it('checks a run pinned on purpose to the active version too, but not one pinned to an older version', async () => {
    const sim = await simulator({ retrainAfterPredicts: 20 });
    const pinned = (version: number) => [
      'score',
      input,
      '--out',
      join(tmp.dir, `pinned-${version}`),
      '--run-id',
      'm',
      '--batch-size',
      '50',
      '--concurrency',
      '1',
    ];
    const active = await runCli([...pinned(2), '--model', 'mindsdb/home_rentals_model.2'], { MODEL_SERVICE_URL: sim.url });
    expect(active.code, active.stderr).toBe(0);
    expect((await manifestOf(join(tmp.dir, 'pinned-2', 'm'))).warnings.join('\n')).toMatch(/version 3 is active now; the run stayed pinned to version 2/);
    const describes = sim.stats.describeRequests;
    // Version 1 was not the active one when the run started: what became active since is no news to it.
    const older = await runCli([...pinned(1), '--model', 'mindsdb/home_rentals_model.1'], { MODEL_SERVICE_URL: sim.url });
    expect(older.code, older.stderr).toBe(0);
    expect((await manifestOf(join(tmp.dir, 'pinned-1', 'm'))).warnings).toEqual([]);
    expect(sim.stats.describeRequests - describes).toBe(2);
  });
});

describe('one logger passed down', () => {
  it("logs the service client's retries with the run id and the segment", async () => {
    const sim = await simulator({ rateLimitRate: 0.2, retryAfterSeconds: 0, seed: 3 });
    // Retries to spare: a call that spends them all on 429s fails the run, and this test is about its logs.
    const r = await runCli(
      ['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'logs'), '--run-id', 'lg', '--batch-size', '100', '--retries', '30'],
      {
        MODEL_SERVICE_URL: sim.url,
        LOG_LEVEL: 'debug',
      },
    );
    expect(r.code).toBe(0);
    const retries = r.stderr
      .split('\n')
      .filter((l) => l.includes('retrying service call'))
      .map((l) => JSON.parse(l) as { runId?: string; segment?: number; op: string; err?: { code?: string; stack?: string } });
    expect(retries.length).toBeGreaterThan(0);
    // Each keeps the error it retries: its code and stack, not only its message.
    expect(retries.every((l) => /^E_[A-Z_]+$/.test(l.err?.code ?? '') && typeof l.err?.stack === 'string')).toBe(true);
    const predicts = retries.filter((l) => l.op === 'predict' && l.segment !== undefined);
    expect(predicts.length).toBeGreaterThan(0);
    expect(retries.every((l) => l.runId === 'lg')).toBe(true);
  });
});

describe('service errors that say what is wrong', () => {
  it('nothing listening: fails within seconds, naming the URL', async () => {
    const gone = await startSimulator();
    await gone.close();
    const started = Date.now();
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'gone')], {
      MODEL_SERVICE_URL: gone.url,
      LOG_LEVEL: 'warn',
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`nothing answers at ${gone.url}`);
    expect(r.stderr).toMatch(/check --service.*\[E_SERVICE_UNREACHABLE\]/);
  });

  it('an unknown host: fails within seconds', async () => {
    const started = Date.now();
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'nohost')], {
      MODEL_SERVICE_URL: 'http://no-such-host.invalid:47334',
      LOG_LEVEL: 'warn',
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/nothing answers at http:\/\/no-such-host\.invalid:47334.*\[E_SERVICE_UNREACHABLE\]/);
  });

  it('a URL without the service prefix: says it does not look like the service', async () => {
    const sim = await simulator({ basePath: '/v1' });
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'prefix')], {
      MODEL_SERVICE_URL: sim.url.replace(/\/v1$/, ''),
      LOG_LEVEL: 'warn',
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/does not look like a Model Query Service: check --service and its path prefix.*\[E_SERVICE_URL\]/);
  });

  it('a service that stays overloaded: the code after the retries ran out does not say RETRIABLE', async () => {
    const sim = await simulator({ rateLimitRate: 1, retryAfterSeconds: 0 });
    const r = await score(sim, [input, '--out', join(tmp.dir, 'overloaded'), '--retries', '1', '--limit', '10']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/gave up after 2 attempts.*\[E_SERVICE_UNAVAILABLE\]/);
    expect(r.stderr).not.toMatch(/RETRIABLE/);
  });
});
