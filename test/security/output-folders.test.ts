import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { folderTree } from '../helpers/folder-tree.js';
import { waitFor } from '../helpers/queue.js';
import { startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

// The probes of issue 21 on output folders, replayed through the real CLI against the simulator:
// a run must never touch a folder it did not make, must fail fast where no folder can be made,
// and a failed run must tell the truth about what it left and whether resuming can help.

const MODEL = 'mindsdb/home_rentals_model';
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  input = join(tmp.dir, 'customers.csv');
  await writeRentals(input, 200);
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

const score = (args: string[]) => runCli(['score', ...args], { MODEL_SERVICE_URL: sim.url, LOG_LEVEL: 'warn' });

describe('a foreign folder named as a run folder', () => {
  it('is refused with E_OUTPUT naming it, and every file in it is byte-identical after', async () => {
    const out = join(tmp.dir, 'shared');
    const foreign = join(out, 'nightly');
    await mkdir(join(foreign, '_work'), { recursive: true });
    await writeFile(join(foreign, 'predictions.csv'), 'id,score\n1,0.5\n');
    await writeFile(join(foreign, '_work', 'notes.txt'), 'do not delete\n');
    const before = await folderTree(out);

    const r = await score([input, '--model', MODEL, '--out', out, '--run-id', 'nightly']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^batch-scorer: ${foreign} already exists and is not run nightly's folder: .* \\[E_OUTPUT\\]$`, 'm'));
    expect(r.stderr).not.toMatch(/resume:/);
    expect(await folderTree(out)).toEqual(before);
  });

  it('holding only a half-written-looking file (and an empty folder) is not empty: refused, left as it was', async () => {
    const out = join(tmp.dir, 'shared-2');
    const foreign = join(out, 'nightly');
    await mkdir(join(foreign, 'empty'), { recursive: true });
    await mkdir(join(foreign, '_work'), { recursive: true });
    await writeFile(join(foreign, '_work', 'claim.json.tmp-aaaaaaaaaaaa'), "not the run's\n");
    const before = await folderTree(out);

    const r = await score([input, '--model', MODEL, '--out', out, '--run-id', 'nightly']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/already exists and is not run nightly's folder: .* \[E_OUTPUT\]$/m);
    expect(await folderTree(out)).toEqual(before);
  });
});

describe('an output location where no folder can be made', () => {
  for (const out of ['/proc/x', '/sys/x']) {
    it(`${out}: exits non-zero within 10 s with E_OUTPUT naming it, before describe`, async () => {
      const describes = sim.stats.describeRequests;
      const started = Date.now();
      const r = await score([input, '--model', MODEL, '--out', out, '--run-id', 'r']);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(`^batch-scorer: run folder ${out}/r: cannot make the folder ${out}/r/_work: .*; choose another --out \\[E_OUTPUT\\]$`, 'm'),
      );
      expect(sim.stats.describeRequests).toBe(describes);
    });
  }

  it('a file in the way: refused before describe, and the file left alone', async () => {
    const file = join(tmp.dir, 'a-file');
    await writeFile(file, 'keep me');
    const r = await score([input, '--model', MODEL, '--out', join(file, 'runs')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/a-file is a file, not a folder; choose another --out \[E_OUTPUT\]$/m);
    expect(await readFile(file, 'utf8')).toBe('keep me');
  });
});

describe('SIGTERM', () => {
  it('ends a process whose work does not heed the abort within its shutdown timeout, with 143', async () => {
    // The step that hangs stands for a filesystem call that never returns (what Node's recursive
    // mkdir did on /proc); the process must still end once its shutdown timeout has passed.
    const action = fileURLToPath(new URL('../../dist/cli/graceful-exit.js', import.meta.url));
    const script = `import(${JSON.stringify(action)}).then(({ interruptSignal }) => { interruptSignal(1000); setInterval(() => undefined, 1000); console.log('ready'); });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const exited = once(child, 'close');
    await waitFor('the process to be ready', () => stdout.includes('ready'), 10_000);
    const signalled = Date.now();
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(143);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(900);
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(stderr).toContain('still stopping 1000 ms after SIGTERM (see --shutdown-timeout); exiting now');
  });
});

describe('a run that fails before its plan is made', () => {
  const neverStarted = async (folder: string) => {
    expect(await folderTree(folder)).toEqual({
      '_work/': 'folder',
      '_work/attempt.json': expect.any(String) as string,
      '_work/claim.json': expect.any(String) as string,
      'manifest.json': expect.any(String) as string,
    });
    return JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Manifest;
  };

  it('at describe: its folder is marked as never started, and no resume command is offered', async () => {
    const out = join(tmp.dir, 'unknown-model');
    const r = await score([input, '--model', 'mindsdb/nope', '--out', out, '--run-id', 'd', '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^batch-scorer: run d failed: .*Model not found.* \[E_MODEL_NOT_FOUND\]\nrun folder: \S+\/d\n$/m);
    expect(JSON.parse(r.stdout)).toEqual({
      runId: 'd',
      state: 'failed',
      folder: join(out, 'd'),
      error: expect.objectContaining({ code: 'E_MODEL_NOT_FOUND' }) as object,
    });
    expect(await neverStarted(join(out, 'd'))).toMatchObject({ folder: join(out, 'd'), state: 'failed', started: false, error: { code: 'E_MODEL_NOT_FOUND' } });
  });

  it('on an unreadable input: the same', async () => {
    const bad = join(tmp.dir, 'unreadable.csv');
    await writeFile(bad, 'sqft,location\n1,"never closed\n');
    const out = join(tmp.dir, 'unreadable');
    const r = await score([bad, '--model', MODEL, '--out', out, '--run-id', 'u']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/never closed .*\[E_INPUT\]\nrun folder: \S+\/u\n$/);
    expect(r.stderr).not.toMatch(/resume:/);
    expect(await neverStarted(join(out, 'u'))).toMatchObject({ started: false, error: { code: 'E_INPUT' } });
  });

  it('re-run under its id with another --model: refused with E_RUN_EXISTS, and its folder left as it was', async () => {
    const out = join(tmp.dir, 'other-model');
    expect((await score([input, '--model', 'mindsdb/nope', '--out', out, '--run-id', 'x'])).code).toBe(2);
    const before = await folderTree(out);
    const r = await score([input, '--model', MODEL, '--out', out, '--run-id', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /run x in \S+ was started for another output: this asks --model mindsdb\/home_rentals_model, where the run has mindsdb\/nope; .*\[E_RUN_EXISTS\]$/m,
    );
    expect(r.stderr).not.toMatch(/resume:/);
    expect(await folderTree(out)).toEqual(before);
    expect(existsSync(join(out, 'x', '_SUCCESS'))).toBe(false);
  });
});
