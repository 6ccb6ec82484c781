// What users get from npm: the package packed as `npm publish` would, installed globally into a
// prefix of its own from the tarball, and its command run from a folder outside this checkout
// (not from this checkout's dist/). The tarball is packed from the dist/ that `npm test` builds
// first, as the other tests run it.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { waitFor } from '../helpers/queue.js';
import { startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
const run = promisify(execFile);

let tmp: Awaited<ReturnType<typeof tempDir>>;
let sim: Simulator;
let command: string;
/** Where the command runs: a folder of its own, outside this checkout. */
let elsewhere: string;
/** npm and the installed command find the Node running the tests first, and the prefix's bin folder next. */
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  tmp = await tempDir();
  sim = await startSimulator();
  const prefix = join(tmp.dir, 'prefix');
  env = { ...process.env, PATH: [dirname(process.execPath), join(prefix, 'bin'), process.env.PATH ?? ''].join(delimiter), LOG_LEVEL: 'warn' };
  // Scripts ignored: `prepare` would build dist/ again, which the test run has just done.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp.dir], { cwd: root, env });
  const [{ filename }] = JSON.parse(packed.stdout) as { filename: string }[];
  elsewhere = join(tmp.dir, 'elsewhere');
  await mkdir(elsewhere);
  // From npm's cache where it has the packages (CI's `npm ci` filled it); the registry otherwise.
  await run('npm', ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', join(tmp.dir, filename)], {
    cwd: elsewhere,
    env,
  });
  // As a user types it: found on PATH, in npm's bin folder, which links to the package's launcher.
  command = 'batch-scorer';
}, 180_000);
afterAll(async () => {
  await sim?.close();
  await tmp?.cleanup();
});

describe(`${pkg.name} installed from its npm package`, () => {
  it('says its version: the one package.json gives', async () => {
    const { stdout } = await run(command, ['--version'], { env, cwd: elsewhere });
    expect(stdout.trim()).toBe(pkg.version);
  });

  it('shows its help, naming its commands', async () => {
    const { stdout } = await run(command, ['--help'], { env, cwd: elsewhere });
    for (const name of ['score', 'describe', 'simulate', 'worker', 'enqueue', 'status', 'serve']) expect(stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
  });

  it('scores a CSV file against the simulator into its run folder', async () => {
    const input = join(tmp.dir, 'rentals.csv');
    await writeRentals(input, 25);
    const out = join(tmp.dir, 'runs');
    const { stdout } = await run(command, ['score', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', 'installed', '--json'], {
      env: { ...env, MODEL_SERVICE_URL: sim.url },
      cwd: elsewhere,
    });
    expect(JSON.parse(stdout.trim())).toMatchObject({ runId: 'installed', state: 'succeeded', rowsIn: 25, rowsScored: 25 });
    const rows = Papa.parse<Record<string, string>>(readFileSync(join(out, 'installed', 'predictions.csv'), 'utf8'), { header: true, skipEmptyLines: true });
    expect(rows.errors).toEqual([]);
    expect(rows.data).toHaveLength(25);
    expect(rows.data.every((row) => Number.isFinite(Number(row.rental_price)))).toBe(true);
    expect(existsSync(join(out, 'installed', '_SUCCESS'))).toBe(true);
  });

  it("runs as dist/cli.js's first line says, in one process: its environment and node flags apply", async () => {
    const first = readFileSync(join(root, 'dist', 'cli.js'), 'utf8').split('\n', 1)[0];
    const words = first.replace('#!/usr/bin/env -S ', '').split(' ');
    const at = words.indexOf('node');
    const child = spawn(command, ['simulate', '--port', '0'], { env, cwd: elsewhere, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exited = once(child, 'close');
    try {
      await waitFor('the simulator to listen', () => stdout.includes('simulator listening'), 20_000);
      // The launcher execs: the process spawned is node itself, with the flags and environment of the first line.
      const argv = (await readFile(`/proc/${child.pid}/cmdline`, 'utf8')).split('\0');
      expect(argv.slice(1, 1 + words.length - at - 1)).toEqual(words.slice(at + 1));
      const environ = (await readFile(`/proc/${child.pid}/environ`, 'utf8')).split('\0');
      for (const setting of words.slice(0, at)) expect(environ).toContain(setting);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('on an older Node prints one line naming the Node it found and the one it needs, and exits 2', async () => {
    const old = join(tmp.dir, 'old-node');
    await mkdir(old, { recursive: true });
    // A stand-in of Node 20 as `node`: the launcher asks it its version and runs nothing else on it.
    await writeFile(join(old, 'node'), '#!/bin/sh\necho v20.19.2\n');
    await chmod(join(old, 'node'), 0o755);
    const r = await run(command, ['--version'], { env: { ...env, PATH: `${old}${delimiter}${env.PATH}` }, cwd: elsewhere }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`batch-scorer needs Node 24 or newer (engines >=24); found v20.19.2 at ${join(old, 'node')}\n`);
  });

  const systemNode = systemNodeMajor();
  it.skipIf(systemNode === undefined || systemNode >= 24)("with the machine's own older Node (/usr/bin) first on PATH: the same line, exit 2", async () => {
    const r = await run(command, ['--version'], { env: { ...env, PATH: `/usr/bin${delimiter}${env.PATH}` }, cwd: elsewhere }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^batch-scorer needs Node 24 or newer \(engines >=24\); found v\d+\.\d+\.\d+ at \/usr\/bin\/node\n$/);
  });

  it("needs the Node major version package.json's engines names", () => {
    const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(readFileSync(join(root, 'bin', 'batch-scorer'), 'utf8')).toContain(`\nNEEDED=${engines.replace('>=', '')}\n`);
  });
});

/** The major version of /usr/bin/node, where the machine has one. */
function systemNodeMajor(): number | undefined {
  if (!existsSync('/usr/bin/node')) return undefined;
  return Number(/^v(\d+)/.exec(execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }))?.[1]);
}
