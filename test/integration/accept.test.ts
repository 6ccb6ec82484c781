import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { startSimulator, tempDir, writeRentals, writeShiftedRentals } from '../helpers/scoring.js';

const TOKEN = 'tok-accept-1a2b3c';
const ROWS = 300;
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let out: string;

const env = () => ({ MODEL_SERVICE_URL: sim.url, MODEL_SERVICE_TOKEN: TOKEN });
const scoreArgs = (input: string, runId: string, ...more: string[]) => [
  'score',
  input,
  '--model',
  'mindsdb/home_rentals_model',
  '--out',
  out,
  '--run-id',
  runId,
  ...more,
];
const manifestOf = async (runId: string) => JSON.parse(await readFile(join(out, runId, 'manifest.json'), 'utf8')) as Record<string, unknown>;

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN });
  tmp = await tempDir();
  out = join(tmp.dir, 'out');
  const input = join(tmp.dir, 'in.csv');
  await writeRentals(input, ROWS);
  await writeShiftedRentals(join(tmp.dir, 'shifted.csv'), ROWS, 3);
  expect((await runCli(scoreArgs(input, 'a'), env())).code).toBe(0);
  const drifted = await runCli(scoreArgs(join(tmp.dir, 'shifted.csv'), 'b', '--baseline-run', 'a', '--drift-fail', '0.25'), env());
  expect([drifted.code, drifted.stderr]).toEqual([1, expect.stringContaining('[E_DRIFT]')]);
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

describe('batch-scorer accept (child process)', () => {
  it('refuses a run that succeeded, and one with no manifest, with exit 2', async () => {
    const succeeded = await runCli(['accept', 'a', '--out', out], env());
    expect([succeeded.code, succeeded.stderr]).toEqual([2, expect.stringMatching(/run a has succeeded; it cannot be accepted.*\[E_RUN_CONFLICT\]/)]);
    const none = await runCli(['accept', 'nope', '--out', out], env());
    expect([none.code, none.stderr]).toEqual([2, expect.stringMatching(/no manifest\.json in .*nope.*\[E_RUN_CONFLICT\]/)]);
    const bad = await runCli(['accept', '../a', '--out', out], env());
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('[E_USAGE]')]);
    expect((await manifestOf('a')).accepted).toBeUndefined();
  });

  it('accepts a run held by its drift gate: succeeded, the error kept, _SUCCESS last; again is a no-op', async () => {
    const before = await manifestOf('b');
    expect(before).toMatchObject({ state: 'held', error: { code: 'E_DRIFT' }, drift: { level: 'fail', baseline: { runId: 'a' } } });
    expect(existsSync(join(out, 'b', '_SUCCESS'))).toBe(false);
    // Held, the run is not resumed: nothing of what it sent is kept for a resume.
    expect(existsSync(join(out, 'b', '_work', 'caps.json'))).toBe(false);

    const r = await runCli(['accept', 'b', '--out', out, '--by', 'reviewer', '--why', 'new pricing'], env());
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toMatch(/^run b accepted by reviewer at \S+: succeeded, _SUCCESS written \(it was held on E_DRIFT\)\n$/);
    const after = await manifestOf('b');
    expect(after).toMatchObject({
      state: 'succeeded',
      drift: before.drift,
      outputs: before.outputs,
      accepted: { by: 'reviewer', why: 'new pricing', error: before.error },
    });
    expect(after).not.toHaveProperty('error');
    const at = (after.accepted as { at: string }).at;
    expect(new Date(at).toISOString()).toBe(at);
    expect(existsSync(join(out, 'b', '_SUCCESS'))).toBe(true);

    const again = await runCli(['accept', 'b', '--out', out, '--json'], env());
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ runId: 'b', folder: join(out, 'b'), already: true, accepted: after.accepted });
    expect(await manifestOf('b')).toEqual(after);
  });
});
