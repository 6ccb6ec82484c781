import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescribeSnapshot } from '../../src/scoring/describe-snapshot.js';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const TOKEN = 'tok-9f8e7d6c5b4a';
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;

beforeAll(async () => {
  sim = await startSimulator({ token: TOKEN });
  tmp = await tempDir();
  input = join(tmp.dir, 'in.csv');
  await writeRentals(input, 300);
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

const env = () => ({ MODEL_SERVICE_URL: sim.url, MODEL_SERVICE_TOKEN: TOKEN, LOG_LEVEL: 'debug' });

describe('batch-scorer CLI (child process)', () => {
  it('score exits 0 with one JSON summary line, and never prints the token', async () => {
    const out = join(tmp.dir, 'out');
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', out, '--run-id', 'cli', '--json'], env());
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ runId: 'cli', state: 'succeeded', rowsIn: 300, rowsScored: 300, folder: join(out, 'cli') });
    expect(r.stderr).toContain('"msg":"run planned"');
    // What started it: a person at the command line.
    expect(JSON.parse(await readFile(join(out, 'cli', 'manifest.json'), 'utf8'))).toMatchObject({ trigger: { kind: 'cli', command: 'score' } });
    for (const text of [
      r.stdout,
      r.stderr,
      await readFile(join(out, 'cli', 'manifest.json'), 'utf8'),
      await readFile(join(out, 'cli', 'describe.json'), 'utf8'),
    ]) {
      expect(text).not.toContain(TOKEN);
    }
  });

  it('prints the run folder in plain mode', async () => {
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'plain'), '--run-id', 'p', '--limit', '5'], env());
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/run p succeeded: 5 rows scored, 0 quarantined/);
    expect(r.stdout).toContain(`run folder: ${join(tmp.dir, 'plain', 'p')}`);
  });

  const refusals: [string, string[], number, RegExp][] = [
    ['a missing input', ['score', 'nope.csv'], 2, /nope\.csv: no such file/],
    ['an empty input', ['score', 'EMPTY'], 1, /the file is empty/],
    ['an unknown model', ['score', 'IN', '--model', 'mindsdb/unknown_model'], 2, /Model not found.*check the project and model names/],
    ['a model still training', ['score', 'IN', '--model', 'mindsdb/training_model'], 1, /not ready/],
    ['a bad number', ['score', 'IN', '--batch-size', 'lots'], 2, /--batch-size takes a whole number, got "lots"/],
    ['an out-of-range option', ['score', 'IN', '--max-error-rate', '3'], 2, /--max-error-rate: must be at most 1/],
    ['a bad model name', ['score', 'IN', '--model', 'justaname'], 2, /expected project\/model/],
    ['an unknown flag', ['score', 'IN', '--bogus'], 2, /unknown option '--bogus'/],
  ];
  for (const [what, args, code, message] of refusals) {
    it(`refuses ${what} with exit ${code}`, async () => {
      const empty = join(tmp.dir, 'empty.csv');
      await writeFile(empty, '');
      const full = args.map((a) => (a === 'IN' ? input : a === 'EMPTY' ? empty : a));
      if (!full.includes('--model')) full.push('--model', 'mindsdb/home_rentals_model');
      const out = join(tmp.dir, `refused-${code}-${what.replace(/\W/g, '')}`);
      const r = await runCli([...full, '--out', out, '--run-id', 'r'], env());
      expect(r.code).toBe(code);
      expect(r.stderr).toMatch(message);
      expect(existsSync(join(out, 'r', '_SUCCESS'))).toBe(false);
    });
  }

  it('fails with exit 2 and says to set the token when it is missing', async () => {
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'notoken')], { ...env(), MODEL_SERVICE_TOKEN: '' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/HTTP 401.*MODEL_SERVICE_TOKEN/);
  });

  it('describe prints both answers as JSON', async () => {
    const r = await runCli(['describe', '--model', 'mindsdb/home_rentals_model'], env());
    expect(r.code).toBe(0);
    const answers = JSON.parse(r.stdout) as DescribeSnapshot['answers'];
    expect(answers[1].response).toHaveProperty([0, 'inputs'], expect.arrayContaining(['sqft']));
  });

  it('rejects an invalid config file, naming it and the key', async () => {
    const dir = join(tmp.dir, 'config');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'default.yaml'), 'run:\n  batchSize: 0\n');
    const r = await runCli(['score', input, '--model', 'mindsdb/home_rentals_model', '--out', join(tmp.dir, 'cfg')], { ...env(), CONFIG_DIR: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/default\.yaml: run\.batchSize/);
  });
});
