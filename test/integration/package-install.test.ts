// What users get from npm: the package packed as `npm publish` would, installed into an empty
// folder from the tarball, and its command run from there (not from this checkout's dist/).
// The tarball is packed from the dist/ that `npm test` builds first, as the other tests run it.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
const run = promisify(execFile);
/** npm and the installed command's `#!/usr/bin/env ... node` find the Node running the tests first. */
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, LOG_LEVEL: 'warn' };

let tmp: Awaited<ReturnType<typeof tempDir>>;
let sim: Simulator;
let command: string;

beforeAll(async () => {
  tmp = await tempDir();
  sim = await startSimulator();
  // Scripts ignored: `prepare` would build dist/ again, which the test run has just done.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp.dir], { cwd: root, env });
  const [{ filename }] = JSON.parse(packed.stdout) as { filename: string }[];
  const app = join(tmp.dir, 'app');
  await run('mkdir', [app]);
  // An empty project of its own, so that npm installs here and not into a folder above.
  await writeFile(join(app, 'package.json'), '{ "private": true }\n');
  // From npm's cache where it has the packages (CI's `npm ci` filled it); the registry otherwise.
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', join(tmp.dir, filename)], {
    cwd: app,
    env,
  });
  command = join(app, 'node_modules', '.bin', 'batch-scorer');
}, 180_000);
afterAll(async () => {
  await sim?.close();
  await tmp?.cleanup();
});

describe(`${pkg.name} installed from its npm package`, () => {
  it('says its version: the one package.json gives', async () => {
    const { stdout } = await run(command, ['--version'], { env });
    expect(stdout.trim()).toBe(pkg.version);
  });

  it('shows its help, naming its commands', async () => {
    const { stdout } = await run(command, ['--help'], { env });
    for (const name of ['score', 'describe', 'simulate', 'worker', 'enqueue', 'status', 'serve']) expect(stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });

  it('scores a CSV file against the simulator into its run folder', async () => {
    const input = join(tmp.dir, 'rentals.csv');
    await writeRentals(input, 25);
    const out = join(tmp.dir, 'runs');
    const { stdout } = await run(command, ['score', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', 'installed', '--json'], {
      env: { ...env, MODEL_SERVICE_URL: sim.url },
    });
    expect(JSON.parse(stdout.trim())).toMatchObject({ runId: 'installed', state: 'succeeded', rowsIn: 25, rowsScored: 25 });
    const rows = Papa.parse<Record<string, string>>(readFileSync(join(out, 'installed', 'predictions.csv'), 'utf8'), { header: true, skipEmptyLines: true });
    expect(rows.errors).toEqual([]);
    expect(rows.data).toHaveLength(25);
    expect(rows.data.every((row) => Number.isFinite(Number(row.rental_price)))).toBe(true);
    expect(existsSync(join(out, 'installed', '_SUCCESS'))).toBe(true);
  });
});
