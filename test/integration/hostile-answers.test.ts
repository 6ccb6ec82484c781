import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { runCli } from '../helpers/cli.js';
import { filler, startHostileModel, type HostileModel } from '../helpers/hostile-model.js';
import { runCliMeasured } from '../helpers/peak-rss.js';
import { useRentalsInput } from '../helpers/scoring.js';

// Issue 32: a model's answers are bounded and never trusted. A hostile model (a real HTTP server
// answering as the simulator does, but where a test says otherwise) answers predict with a valid
// array followed by 1.5 GB of white space, describe with a 200 MB member, predict nested 100,000
// deep, and numbers past a double's range. Each ends as a clear error or a quarantine, in bounded
// memory, with nothing partial presented as complete.

const ROWS = 2000;
const MODEL = 'mindsdb/home_rentals_model';
const MiB = 1024 * 1024;
/** Peak RSS a run may reach whatever the answers (the bound). */
const PEAK_RSS_MIB = 400;

const files = useRentalsInput(ROWS);
let hostile: HostileModel | undefined;

afterEach(async () => {
  await hostile?.close();
  hostile = undefined;
});

/** `score` of the input against the hostile model as run `runId`, in batches of 500. */
const scoreArgs = (model: HostileModel, runId: string, ...more: string[]) => [
  'score',
  files.input,
  '--model',
  MODEL,
  '--out',
  join(files.dir, 'out'),
  '--service',
  model.url,
  '--run-id',
  runId,
  '--batch-size',
  '500',
  ...more,
];
const runFolder = (runId: string) => join(files.dir, 'out', runId);
const manifestOf = async (runId: string) => JSON.parse(await readFile(join(runFolder(runId), 'manifest.json'), 'utf8')) as Manifest;

/** Every predict answered after planning's probe as `answer` makes it from the simulator's. */
const afterProbe = (answer: (normal: string) => ReturnType<typeof filler> | string) => (normal: string, n: number) => (n === 1 ? undefined : answer(normal));

/** The simulator's answer, then 1.5 GB of white space: valid JSON, if it were read to its end. */
function* trailingSpace(normal: string): Generator<Buffer> {
  yield Buffer.from(normal);
  yield* filler(1.5e9);
}

describe('a predict answer past its bytes', () => {
  it('fails the run E_LIMIT naming MAX_ANSWER_RATIO, read no further than its allowance, in bounded memory; nothing presented as complete', async () => {
    hostile = await startHostileModel({ predict: afterProbe(trailingSpace) });
    const run = await runCliMeasured(scoreArgs(hostile, 'spaces', '--concurrency', '1'));
    console.log(`1.5 GB answer (MAX_ANSWER_RATIO): peak RSS ${run.peakRssMiB.toFixed(1)} MiB, ${(hostile.bytesWritten() / MiB).toFixed(1)} MiB sent`);
    expect(run.code).toBe(1);
    // A batch of 500 rows is about 75 KB: 64 times that, some 5 MB, is its answer's allowance.
    expect(run.stderr).toMatch(
      /predict \S+: an answer of more than [\d,]+ bytes to a request of [\d,]+ bytes passes MAX_ANSWER_RATIO \(64\): raise MAX_ANSWER_RATIO if this is expected \[E_LIMIT\]/,
    );
    expect(run.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
    // The connection was closed once the allowance was passed: what was sent is a fraction of the 1.5 GB.
    expect(hostile.bytesWritten()).toBeLessThan(100 * MiB);
    // Not retried: the same batch would be answered the same way.
    expect(hostile.repeatedPredicts).toBe(0);
    expect(existsSync(join(runFolder('spaces'), '_SUCCESS'))).toBe(false);
    expect(await manifestOf('spaces')).toMatchObject({ state: 'failed', error: { code: 'E_LIMIT' } });
  });

  it('names MAX_ANSWER_BYTES where the ceiling, not the ratio, is the bound; --json says so too', async () => {
    hostile = await startHostileModel({ predict: afterProbe(trailingSpace) });
    const run = await runCliMeasured(scoreArgs(hostile, 'ceiling', '--json'), { MAX_ANSWER_BYTES: '2MiB' });
    console.log(`1.5 GB answer (MAX_ANSWER_BYTES 2 MiB): peak RSS ${run.peakRssMiB.toFixed(1)} MiB`);
    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { state: string; error: { code: string; message: string } };
    expect(result).toMatchObject({ state: 'failed', error: { code: 'E_LIMIT' } });
    expect(result.error.message).toMatch(/an answer of more than 2,097,152 bytes passes MAX_ANSWER_BYTES \(2 MiB\): raise MAX_ANSWER_BYTES/);
    expect(run.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
    expect(existsSync(join(runFolder('ceiling'), '_SUCCESS'))).toBe(false);
  });

  it('is refused at once when its Content-Length passes the allowance', async () => {
    hostile = await startHostileModel({ predict: afterProbe((normal) => normal + ' '.repeat(6 * MiB)) });
    const run = await runCli(scoreArgs(hostile, 'declared', '--concurrency', '1'));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/an answer of [\d,]+ bytes \(its Content-Length\) to a request of [\d,]+ bytes passes MAX_ANSWER_RATIO/);
    expect(hostile.repeatedPredicts).toBe(0);
  });
});

describe('a describe answer past its bytes', () => {
  it('fails the run E_LIMIT naming MAX_DESCRIBE_BYTES before it plans, writes none of it, in bounded memory', async () => {
    // The simulator's describe, with a member of 200 MB.
    function* padded(normal: string): Generator<Buffer> {
      yield Buffer.from(`${normal.slice(0, normal.lastIndexOf('}'))},"padding":"`);
      yield* filler(200 * MiB, 'x');
      yield Buffer.from('"}]');
    }
    hostile = await startHostileModel({ describe: padded });
    const run = await runCliMeasured(scoreArgs(hostile, 'describe'));
    console.log(`200 MB describe: peak RSS ${run.peakRssMiB.toFixed(1)} MiB, ${(hostile.bytesWritten() / MiB).toFixed(1)} MiB sent`);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /describe \S+: an answer of more than 16,777,216 bytes passes MAX_DESCRIBE_BYTES \(16 MiB\): raise MAX_DESCRIBE_BYTES if this is expected \[E_LIMIT\]/,
    );
    expect(run.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
    // Planning stopped at describe: not one predict, no snapshot of it written.
    expect(hostile.predicts).toBe(0);
    const snapshot = join(runFolder('describe'), 'describe.json');
    expect(existsSync(snapshot) ? (await stat(snapshot)).size : 0).toBeLessThan(64 * 1024);
    expect(existsSync(join(runFolder('describe'), '_SUCCESS'))).toBe(false);
  });
});

describe('a describe answer within its bounds, nested deep', () => {
  it('is kept in describe.json without indenting, which would repeat its depth on every line', async () => {
    // 7 MB of numbers 60 levels down: indented, 450 MB.
    function* deep(normal: string): Generator<Buffer> {
      yield Buffer.from(`${normal.slice(0, normal.lastIndexOf('}'))},"padding":${'['.repeat(60)}0`);
      for (let i = 0; i < 100; i++) yield Buffer.from(',0'.repeat(35_000));
      yield Buffer.from(`${']'.repeat(60)}}]`);
    }
    hostile = await startHostileModel({ describe: deep });
    const run = await runCliMeasured(scoreArgs(hostile, 'deep-describe'));
    console.log(`7 MB describe 60 deep: peak RSS ${run.peakRssMiB.toFixed(1)} MiB`);
    expect(run.code).toBe(0);
    expect((await stat(join(runFolder('deep-describe'), 'describe.json'))).size).toBeLessThan(16 * MiB);
    expect(run.peakRssMiB).toBeLessThan(PEAK_RSS_MIB);
  });
});

describe('a predict answer nested past MAX_ANSWER_DEPTH', () => {
  it('fails the run E_LIMIT before it is parsed, not retried', async () => {
    const deep = `[{"rental_price":${'['.repeat(100_000)}${']'.repeat(100_000)}}]`;
    hostile = await startHostileModel({ predict: afterProbe(() => deep) });
    const run = await runCli(scoreArgs(hostile, 'deep', '--concurrency', '1'));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /predict \S+: an answer nested more than 64 levels deep passes MAX_ANSWER_DEPTH \(64\): raise MAX_ANSWER_DEPTH if this is expected \[E_LIMIT\]/,
    );
    expect(run.stderr).not.toMatch(/Maximum call stack|E_INTERNAL/);
    // The probe, then batches each sent once: none was tried again.
    expect(hostile.repeatedPredicts).toBe(0);
    expect(hostile.predicts).toBeLessThanOrEqual(3);
    expect(await manifestOf('deep')).toMatchObject({ state: 'failed', error: { code: 'E_LIMIT' } });
  });
});

describe('numbers past the range of a double', () => {
  it("quarantine their rows with the reason; the others are scored and profiled; the output never holds 'Infinity'", async () => {
    // Rows 7, 107, 207, ... answered 1e999 as their price, rows 57, 157, ... as their interval's max.
    const overflowing = (normal: string) => {
      const rows = JSON.parse(normal) as Record<string, unknown>[];
      for (const row of rows) {
        const id = row.__mindsdb_row_id as number;
        if (id % 100 === 7) row.rental_price = '1e999';
        if (id % 100 === 57) row.rental_price_max = '-1e999';
      }
      return JSON.stringify(rows).replace(/"(-?1e999)"/g, '$1');
    };
    hostile = await startHostileModel({ predict: afterProbe(overflowing) });
    const run = await runCli(scoreArgs(hostile, 'overflow', '--max-error-rate', '0.05'));
    expect(run.code).toBe(0);
    const bad = ROWS / 50;
    const manifest = await manifestOf('overflow');
    expect(manifest).toMatchObject({ state: 'succeeded', counts: { rowsScored: ROWS - bad, rowsQuarantined: bad } });
    // Every row scored has its value in the profile: none left out.
    expect(manifest.profile!.targets[0]).toMatchObject({ target: 'rental_price', kind: 'numeric', count: ROWS - bad, nulls: 0 });
    const predictions = await readFile(join(runFolder('overflow'), 'predictions.csv'), 'utf8');
    expect(predictions).not.toMatch(/Infinity/);
    const errors = (await readFile(join(runFolder('overflow'), 'errors.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { row: number; title: string; detail: string });
    expect(errors).toHaveLength(bad);
    expect(errors[0]).toMatchObject({
      row: 8,
      title: 'Invalid prediction',
      detail: "the model's rental_price is a number past the range of a double (such as 1e999)",
    });
    expect(errors[1]).toMatchObject({ row: 58, detail: "the model's rental_price_max is a number past the range of a double (such as 1e999)" });
  });
});
