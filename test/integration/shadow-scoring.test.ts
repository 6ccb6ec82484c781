import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Comparison } from '../../src/scoring/model-comparison.js';
import { predictTargets } from '../../src/simulator/models.js';
import { runCli } from '../helpers/cli.js';
import { parseCsv, useScoringFixture, writeRentals } from '../helpers/scoring.js';

const f = useScoringFixture();

async function shadow(input: string, runId: string, model: string, other: string, flags: string[] = []) {
  const before = { requests: f.sim.stats.predictRequests, rows: f.sim.stats.predictRows };
  const r = await runCli(['score', input, '--model', model, '--compare-model', other, '--out', f.out, '--run-id', runId, ...flags], {
    MODEL_SERVICE_URL: f.sim.url,
  });
  const folder = join(f.out, runId);
  const read = async <T>(name: string) => JSON.parse(await readFile(join(folder, name), 'utf8')) as T;
  return {
    ...r,
    folder,
    sent: { requests: f.sim.stats.predictRequests - before.requests, rows: f.sim.stats.predictRows - before.rows },
    manifest: existsSync(join(folder, 'manifest.json')) ? await read<Manifest>('manifest.json') : undefined,
    comparison: existsSync(join(folder, 'comparison.json')) ? await read<Comparison>('comparison.json') : undefined,
  };
}

describe('shadow scoring: --compare-model', () => {
  it('a numeric model that differs on every 20th row: 95% agreement, the differing rows named with their inputs, each row sent once to each model', async () => {
    const ROWS = 2_000;
    const input = join(f.dir, 'rentals.csv');
    await writeRentals(input, ROWS);
    const r = await shadow(input, 'rentals', 'mindsdb/home_rentals_model', 'mindsdb/home_rentals_challenger', ['--batch-size', '100']);
    expect(r.code, r.stderr).toBe(0);
    // 20 batches to each model, and the probe (one row, perhaps twice); no second reading of the input.
    expect(r.sent.rows - 2 * ROWS).toBeLessThanOrEqual(2);
    expect(r.sent.requests - 2 * (ROWS / 100)).toBeLessThanOrEqual(2);

    const c = r.comparison!;
    expect(c).toMatchObject({ model: 'mindsdb/home_rentals_model.2', other: 'mindsdb/home_rentals_challenger.1', unanswered: 0 });
    const [price] = c.targets;
    expect(price).toMatchObject({ target: 'rental_price', compared: ROWS, agreed: ROWS * 0.95, agreement: 0.95 });
    // The outputs are the run's model's alone.
    const rows = parseCsv(await readFile(join(r.folder, 'predictions.csv'), 'utf8'));
    expect(rows).toHaveLength(ROWS);
    const inputRows = parseCsv(await readFile(input, 'utf8'));
    expect(price.rows).toHaveLength(20);
    for (const d of price.rows) {
      // Every 20th row (row ids 19, 39, ...), 10% higher: the largest differences come first.
      expect(d.row % 20, `row ${d.row}`).toBe(0);
      const main = Number(rows[d.row - 1].rental_price);
      expect(d.main).toBe(main);
      expect(d.other).toBeCloseTo(main * 1.1, 1);
      expect(d.input.startsWith(`${inputRows[d.row - 1].listing_id},${inputRows[d.row - 1].number_of_rooms},`)).toBe(true);
    }
    const sizes = price.rows.map((d) => Math.abs(d.difference!));
    expect([...sizes].sort((a, b) => b - a)).toEqual(sizes);
    expect(price.difference).toMatchObject({ count: ROWS, min: 0 });
    expect(price.maxShift!.count).toBe(ROWS);
    expect(r.manifest!.comparison).toMatchObject({ file: 'comparison.json', targets: [{ target: 'rental_price', agreement: 0.95 }] });
    expect(existsSync(join(r.folder, '_SUCCESS'))).toBe(true);
  });

  it('a categorical model that flips every 20th answer: agreement exact, the first differing rows listed', async () => {
    const churn = join(f.dir, 'churn.csv');
    const lines = Array.from({ length: 400 }, (_, i) => `c${i},${i % 73},${i % 3 === 0 ? 'basic' : 'pro'},${20 + (i % 11) * 10}`);
    await writeFile(churn, `customer,tenure_months,plan,monthly_charges\n${lines.join('\n')}\n`);
    const r = await shadow(churn, 'churn', 'mindsdb/customer_churn', 'mindsdb/customer_churn_challenger');
    expect(r.code, r.stderr).toBe(0);
    const [target] = r.comparison!.targets;
    expect(target).toMatchObject({ target: 'churn', compared: 400, agreed: 380, agreement: 0.95, difference: null });
    expect(target.rows.map((d) => d.row)).toEqual(Array.from({ length: 20 }, (_, k) => 20 * (k + 1)));
    for (const d of target.rows) {
      const [customer, tenure, plan, charges] = lines[d.row - 1].split(',');
      const expected = predictTargets('customer_churn', 1, { tenure_months: Number(tenure), plan, monthly_charges: Number(charges) }).churn;
      expect([d.main, d.other, d.input.startsWith(customer)]).toEqual([expected, expected === 'yes' ? 'no' : 'yes', true]);
    }
  });

  it('refuses, before scoring, a model to compare with that does not exist or answers other targets', async () => {
    const input = join(f.dir, 'small.csv');
    await writeRentals(input, 50);
    const missing = await shadow(input, 'missing', 'mindsdb/home_rentals_model', 'mindsdb/no_such_model');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/no_such_model/);
    const other = await shadow(input, 'other-targets', 'mindsdb/home_rentals_model', 'mindsdb/customer_churn');
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/--compare-model mindsdb\/customer_churn: it answers churn, not rental_price/);
  });
});
