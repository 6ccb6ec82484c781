import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { runCli } from '../helpers/cli.js';
import { rentalsWithSqft, useScoringFixture } from '../helpers/scoring.js';

const ROWS = 3_000;
const f = useScoringFixture();

/** The rentals file, with each row's sqft passed through `sqft`. */
async function rentals(name: string, sqft: (value: number) => number = (v) => v): Promise<string> {
  const path = join(f.dir, name);
  await writeFile(path, rentalsWithSqft(ROWS, sqft));
  return path;
}

async function score(input: string, runId: string, flags: string[] = []) {
  const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', f.out, '--run-id', runId, ...flags], {
    MODEL_SERVICE_URL: f.sim.url,
  });
  const folder = join(f.out, runId);
  const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
  return { ...r, manifest, success: existsSync(join(folder, '_SUCCESS')), predictions: existsSync(join(folder, 'predictions.csv')) };
}

describe('drift from a baseline run (score --baseline-run)', () => {
  it('the same input again: measured, nothing moved, the run succeeds; a shifted input fails naming the column that moved', async () => {
    const input = await rentals('rentals.csv');
    const first = await score(input, 'base');
    expect(first.code, first.stderr).toBe(0);
    expect(first.manifest.drift).toBeNull();

    const again = await score(await rentals('rentals-again.csv'), 'again', ['--baseline-run', 'base', '--drift-fail', '0.25']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.manifest.drift).toMatchObject({ baseline: { runId: 'base', chosen: 'named' }, level: 'ok', moved: [], thresholds: { warn: 0.1, fail: 0.25 } });
    expect(again.manifest.drift!.columns.map((c) => c.column)).toEqual(expect.arrayContaining(['rental_price', 'rental_price_confidence', 'sqft', 'location']));
    for (const c of again.manifest.drift!.columns) expect(c.psi, c.column).toBe(0);
    expect(again.success).toBe(true);

    // Every sqft half again as large: sqft moves, and the price the model derives from it.
    const shifted = await score(await rentals('rentals-shifted.csv', (v) => Math.round(v * 1.5)), 'shifted', [
      '--baseline-run',
      'base',
      '--drift-fail',
      '0.25',
    ]);
    expect(shifted.code).toBe(1);
    expect(shifted.stderr).toMatch(/E_DRIFT/);
    expect(shifted.stderr).toMatch(/sqft \(PSI \d/);
    expect(shifted.manifest).toMatchObject({ state: 'held', error: { code: 'E_DRIFT' }, drift: { level: 'fail' } });
    expect(shifted.manifest.drift!.moved[0]).toBe('sqft');
    expect(shifted.manifest.drift!.moved).not.toContain('location');
    // Written, but not presented as complete.
    expect(shifted.predictions).toBe(true);
    expect(shifted.manifest.outputs.length).toBeGreaterThan(0);
    expect(shifted.success).toBe(false);
  });

  it('a baseline that cannot be compared with is a warning, not a failure', async () => {
    const r = await score(await rentals('rentals-lonely.csv'), 'lonely', ['--baseline-run', 'no-such-run']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.manifest.drift).toBeNull();
    expect(r.manifest.warnings.some((w) => w.startsWith('drift not measured: baseline run no-such-run: no manifest.json'))).toBe(true);
    expect(r.success).toBe(true);
  });
});
