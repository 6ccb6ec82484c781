import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunComparison } from '../../src/scoring/compare-runs.js';
import type { Comparison } from '../../src/scoring/model-comparison.js';
import { runCli } from '../helpers/cli.js';
import { useScoringFixture, writeRentals, writeRentalsWithEngineErrors, writeShiftedRentals } from '../helpers/scoring.js';

const f = useScoringFixture();
const ROWS = 2_000;

const env = () => ({ MODEL_SERVICE_URL: f.sim.url });

async function scored(input: string, runId: string, model: string, flags: string[] = [], out = f.out): Promise<void> {
  const r = await runCli(['score', input, '--model', model, '--out', out, '--run-id', runId, ...flags], env());
  expect(r.code, r.stderr).toBe(0);
}

async function compared(...args: string[]): Promise<RunComparison> {
  const r = await runCli(['compare', ...args, '--out', f.out, '--json'], env());
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as RunComparison;
}

/** A comparison's targets without the input text of their rows (shadow scoring shows the row as read, compare the columns an output carried). */
const withoutInputs = (targets: Comparison['targets']) => targets.map((t) => ({ ...t, rows: t.rows.map(({ input: _input, ...r }) => r) }));

let rentals: string;

beforeAll(async () => {
  rentals = join(f.dir, 'rentals.csv');
  await writeRentals(rentals, ROWS);
  await scored(rentals, 'champion', 'mindsdb/home_rentals_model');
  await scored(rentals, 'challenger', 'mindsdb/home_rentals_challenger', ['--format', 'parquet']);
  // The same answers, written as JSON Lines cut into gzipped files, with row numbers.
  await scored(rentals, 'challenger-jsonl', 'mindsdb/home_rentals_challenger', [
    '--format',
    'jsonl',
    '--compress',
    'gzip',
    '--max-rows-per-file',
    '300',
    '--row-number',
  ]);
  await scored(rentals, 'shadow', 'mindsdb/home_rentals_model', ['--compare-model', 'mindsdb/home_rentals_challenger']);
});

describe('batch-scorer compare (child process)', () => {
  it('compares runs of the same input row by row, as shadow scoring compares the two models, whatever their output formats', async () => {
    const c = await compared('champion', 'challenger');
    expect(c).toMatchObject({
      mode: 'rows',
      model: 'mindsdb/home_rentals_model.2',
      other: 'mindsdb/home_rentals_challenger.1',
      unanswered: 0,
      runs: { a: { runId: 'champion', folder: join(f.out, 'champion') }, b: { runId: 'challenger', model: 'mindsdb/home_rentals_challenger.1' } },
    });
    if (c.mode !== 'rows') throw new Error('not compared row by row');
    const [price] = c.targets;
    expect(price).toMatchObject({ target: 'rental_price', compared: ROWS, agreed: ROWS * 0.95, agreement: 0.95 });
    expect(price.rows).toHaveLength(20);
    for (const d of price.rows) {
      expect(d.row % 20, `row ${d.row}`).toBe(0);
      expect(d.other).toBeCloseTo((d.main as number) * 1.1, 1);
      // The input columns the output carried, without its predictions.
      expect(JSON.parse(d.input)).toMatchObject({ listing_id: `L${String(d.row - 1).padStart(8, '0')}` });
      expect(d.input).not.toContain('rental_price');
    }
    expect(price.meanAbsDifference).toBeCloseTo(price.difference!.mean, 6);

    const shadow = JSON.parse(await readFile(join(f.out, 'shadow', 'comparison.json'), 'utf8')) as Comparison;
    expect(withoutInputs(c.targets)).toEqual(withoutInputs(shadow.targets));

    const jsonl = await compared('champion', 'challenger-jsonl');
    expect(withoutInputs(jsonl.mode === 'rows' ? jsonl.targets : [])).toEqual(withoutInputs(shadow.targets));
  });

  it('prints a table for people, and writes the whole comparison with --write', async () => {
    const file = join(f.dir, 'comparison.json');
    const r = await runCli(['compare', 'champion', 'challenger', '--out', f.out, '--write', file], env());
    expect([r.code, r.stderr]).toEqual([0, '']);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'run A champion (mindsdb/home_rentals_model.2) and run B challenger (mindsdb/home_rentals_challenger.1): the same input, compared row by row',
    );
    expect(lines[1]).toMatch(/^target\s+compared\s+agreement\s+mean \|difference\|$/);
    expect(lines[2]).toMatch(/^rental_price\s+2000\s+95\.00%\s+\d+(\.\d+)?$/);
    const shown = lines.slice(lines.indexOf('rental_price: the rows that differ most') + 2);
    expect(shown).toHaveLength(5);
    for (const line of shown) expect(Number(line.split(/\s+/)[0]) % 20).toBe(0);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(await compared('champion', 'challenger'));
  });

  it('compares classes: the agreement rate, and the first differing rows', async () => {
    const churn = join(f.dir, 'churn.csv');
    const lines = Array.from({ length: 400 }, (_, i) => `c${i},${i % 73},${i % 3 === 0 ? 'basic' : 'pro'},${20 + (i % 11) * 10}`);
    await writeFile(churn, `customer,tenure_months,plan,monthly_charges\n${lines.join('\n')}\n`);
    await scored(churn, 'churn', 'mindsdb/customer_churn');
    await scored(churn, 'churn-challenger', 'mindsdb/customer_churn_challenger');
    const c = await compared('churn', 'churn-challenger');
    expect(c.mode).toBe('rows');
    const [target] = c.mode === 'rows' ? c.targets : [];
    expect(target).toMatchObject({ target: 'churn', compared: 400, agreed: 380, agreement: 0.95, difference: null, meanAbsDifference: null });
    expect(target.rows.map((d) => d.row)).toEqual(Array.from({ length: 20 }, (_, k) => 20 * (k + 1)));
    for (const d of target.rows) expect(d.other).toBe(d.main === 'yes' ? 'no' : 'yes');
  });

  it('compares runs of different inputs by their profiles, the column that moved most first; run B may live under --out-b', async () => {
    const shifted = join(f.dir, 'shifted.csv');
    await writeShiftedRentals(shifted, ROWS, 3);
    const elsewhere = join(f.dir, 'elsewhere');
    await scored(shifted, 'shifted', 'mindsdb/home_rentals_model', [], elsewhere);
    const r = await runCli(['compare', 'champion', 'shifted', '--out', f.out, '--out-b', elsewhere, '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as RunComparison;
    expect(c).toMatchObject({ mode: 'profile', runs: { b: { folder: join(elsewhere, 'shifted') } } });
    if (c.mode !== 'profile') throw new Error('not compared by profile');
    expect(c.why).toBe('the runs scored different inputs (their sha256 differ)');
    expect(c.drift).toMatchObject({ baseline: { runId: 'champion', chosen: 'named' }, thresholds: { warn: 0.1, fail: null }, level: 'warn' });
    expect(c.drift.columns[0]).toMatchObject({ column: 'sqft', of: 'input', level: 'warn' });
    const psis = c.drift.columns.map((col) => col.psi);
    expect([...psis].sort((x, y) => y - x)).toEqual(psis);
    expect(c.drift.columns.find((col) => col.column === 'number_of_rooms')).toMatchObject({ level: 'ok' });

    const human = await runCli(['compare', 'champion', 'shifted', '--out', f.out, '--out-b', elsewhere], env());
    expect(human.code).toBe(0);
    expect(human.stdout.split('\n')[2]).toMatch(/^sqft\s+input\s+\d+\.\d{4}\s+\d\.\d{4}\s+warn$/);
  });

  it('matches rows around quarantined ones only by row_number: without it in both runs, their profiles are compared', async () => {
    const someBad = join(f.dir, 'some-bad.csv');
    await writeRentalsWithEngineErrors(someBad, 1_000, (i) => i % 200 === 7);
    await scored(someBad, 'bad-a', 'mindsdb/home_rentals_model', ['--row-number']);
    await scored(someBad, 'bad-b', 'mindsdb/home_rentals_challenger', ['--row-number']);
    await scored(someBad, 'bad-plain', 'mindsdb/home_rentals_challenger');
    const c = await compared('bad-a', 'bad-b');
    expect(c.mode).toBe('rows');
    const [price] = c.mode === 'rows' ? c.targets : [];
    // 995 rows scored, of which rows 20, 40, ... differ (none of them quarantined: those are rows 8, 208, ...).
    expect(price).toMatchObject({ compared: 995, agreed: 995 - 50 });
    expect(price.rows.every((d) => d.row % 20 === 0)).toBe(true);
    const plain = await compared('bad-a', 'bad-plain');
    expect(plain).toMatchObject({ mode: 'profile', why: 'rows were quarantined and the outputs have no row_number to match the rest by' });
  });

  it('refuses a run that does not exist, one that failed, and bad arguments, naming which run', async () => {
    const none = await runCli(['compare', 'champion', 'nope', '--out', f.out], env());
    expect([none.code, none.stderr, none.stdout]).toEqual([2, expect.stringMatching(/run B: there is no manifest\.json in .*nope.*\[E_RUN_CONFLICT\]/), '']);

    const shifted = join(f.dir, 'shifted-again.csv');
    await writeShiftedRentals(shifted, ROWS, 3);
    const drifted = await runCli(
      ['score', shifted, '--model', 'mindsdb/home_rentals_model', '--out', f.out, '--run-id', 'drifted', '--baseline-run', 'champion', '--drift-fail', '0.25'],
      env(),
    );
    expect([drifted.code, drifted.stderr]).toEqual([1, expect.stringContaining('[E_DRIFT]')]);
    const failed = await runCli(['compare', 'drifted', 'champion', '--out', f.out], env());
    expect([failed.code, failed.stderr]).toEqual([
      2,
      expect.stringMatching(/run A \(drifted\) is held; only runs that succeeded are compared \[E_RUN_CONFLICT\]/),
    ]);

    const bad = await runCli(['compare', 'champion', '../champion', '--out', f.out], env());
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('[E_USAGE]')]);
    const missing = await runCli(['compare', 'champion', '--out', f.out], env());
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('[E_USAGE]')]);
  });
});
