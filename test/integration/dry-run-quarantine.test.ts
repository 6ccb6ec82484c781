import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dryRunReportSchema } from '../../src/scoring/dry-run.js';
import { runCli } from '../helpers/cli.js';
import { rentalsText, useScoringFixture, writeRentals, writeRentalsWithEngineErrors } from '../helpers/scoring.js';

// A dry run whose canary quarantines a share of rows past --max-error-rate says the run would fail
// E_ERROR_RATE, for people and in its JSON; the run then fails so. A clean input warns of nothing.

const MODEL = 'mindsdb/home_rentals_model';
const f = useScoringFixture();
const env = () => ({ MODEL_SERVICE_URL: f.sim.url });
const WARNING = '2 of 10 canary rows quarantined (20%): past --max-error-rate 0.01 (0 of 10 rows allowed); the run would fail with E_ERROR_RATE';

/** `score <input> --dry-run`, in JSON and for people, each exiting 0. */
async function dryRuns(input: string): Promise<{ report: ReturnType<typeof dryRunReportSchema.parse>; human: string }> {
  const args = ['score', input, '--model', MODEL, '--out', join(f.dir, 'never'), '--max-error-rate', '0.01', '--dry-run'];
  const json = await runCli([...args, '--json'], env());
  expect(json.code, json.stderr).toBe(0);
  const human = await runCli(args, env());
  expect(human.code, human.stderr).toBe(0);
  return { report: dryRunReportSchema.parse(JSON.parse(json.stdout)), human: human.stdout };
}

describe('dry run and the error budget', () => {
  it('warns when 2 of 10 rows are refused by the model, and the run then fails E_ERROR_RATE', async () => {
    const input = join(f.dir, 'two-refused.csv');
    await writeRentalsWithEngineErrors(input, 10, (i) => i === 3 || i === 7);

    const { report, human } = await dryRuns(input);
    expect(report.canary).toMatchObject({ rows: 10, scored: 8, quarantined: 2 });
    expect(report.warnings).toEqual([WARNING]);
    expect(human).toContain(`warning: ${WARNING}\n`);

    const run = await runCli(['score', input, '--model', MODEL, '--out', join(f.dir, 'out'), '--max-error-rate', '0.01', '--json'], env());
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ state: 'failed', error: { code: 'E_ERROR_RATE' } });
  });

  it('counts malformed rows, never sent, among the canary quarantined', async () => {
    const input = join(f.dir, 'two-malformed.csv');
    const text = rentalsText(10).split('\n');
    // Lines 4 and 8 (rows 3 and 7) get a field more than the header has.
    for (const line of [4, 8]) text[line] += ',extra';
    await writeFile(input, text.join('\n'));

    const { report } = await dryRuns(input);
    expect(report.canary).toMatchObject({ rows: 10, scored: 8, quarantined: 2 });
    expect(report.warnings).toEqual([WARNING]);
  });

  it('extrapolates a canary that covers the first rows only', async () => {
    const input = join(f.dir, 'first-rows-refused.csv');
    // 1,000 rows; the canary's 8 batches of 10 cover the first 80, one refused (1.25%): 12 of the run's 1,000, past its 10.
    await writeRentalsWithEngineErrors(input, 1000, (i) => i === 5);
    const r = await runCli(['score', input, '--model', MODEL, '--out', join(f.dir, 'never'), '--batch-size', '10', '--dry-run', '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    expect(dryRunReportSchema.parse(JSON.parse(r.stdout)).warnings).toEqual([
      '1 of 80 canary rows quarantined (1.3%): past --max-error-rate 0.01 (10 of 1000 rows allowed); at that share the run would fail with E_ERROR_RATE',
    ]);
  });

  it('says nothing of the error budget for a clean input', async () => {
    const input = join(f.dir, 'clean.csv');
    await writeRentals(input, 10);
    const { report, human } = await dryRuns(input);
    expect(report.canary).toMatchObject({ rows: 10, scored: 10, quarantined: 0 });
    expect(report.warnings).toEqual([]);
    expect(human).not.toContain('warning:');
  });
});
