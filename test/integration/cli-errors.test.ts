import { existsSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli, startCli, type CliResult } from '../helpers/cli.js';
import { waitFor } from '../helpers/queue.js';
import { startSimulator, tempDir, writeRentals } from '../helpers/scoring.js';

const MODEL = 'mindsdb/home_rentals_model';
let sim: Simulator;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let input: string;
/** 50 good rows, then 5 with too many fields: quarantined, so `--max-error-rate 0` fails the run. */
let withBadRows: string;

beforeAll(async () => {
  sim = await startSimulator();
  tmp = await tempDir();
  input = join(tmp.dir, 'in.csv');
  await writeRentals(input, 300);
  withBadRows = join(tmp.dir, 'bad-rows.csv');
  await writeRentals(withBadRows, 50);
  await appendFile(withBadRows, '1,2,3,4,5,6,7,8,9,10,11,12\n'.repeat(5));
});
afterAll(async () => {
  await sim.close();
  await tmp.cleanup();
});

const env = () => ({ MODEL_SERVICE_URL: sim.url });

/** The failure line's run id, and the resume line's folder and command. */
function failureLines(stderr: string): { runId: string; folder: string; resume: string } {
  const failed = /^batch-scorer: run (\S+) failed: .* \[E_[A-Z_]+\]$/m.exec(stderr);
  const next = /^run folder: (\S+); resume: (.+)$/m.exec(stderr);
  expect(failed, stderr).not.toBeNull();
  expect(next, stderr).not.toBeNull();
  return { runId: failed![1], folder: next![1], resume: next![2] };
}

/** The arguments of a refused `score` after the subcommand, and the --out it names. */
interface Refused {
  args: string[];
  out: string;
}

describe('requests refused before anything is written', () => {
  const cases: [string, () => Promise<Refused> | Refused, RegExp][] = [
    [
      'a malformed --model',
      () => ({ args: [input, '--model', 'justaname'], out: join(tmp.dir, 'bad-model') }),
      /^batch-scorer: --model "justaname": expected project\/model .*\[E_USAGE\]$/m,
    ],
    [
      'a missing input',
      () => ({ args: [join(tmp.dir, 'nope.csv'), '--model', MODEL], out: join(tmp.dir, 'missing') }),
      /^batch-scorer: \S+nope\.csv: no such file or object \[E_INPUT_NOT_FOUND\]$/m,
    ],
    [
      'an input that is a directory',
      async () => {
        const dir = join(tmp.dir, 'a-folder');
        await mkdir(dir, { recursive: true });
        return { args: [dir, '--model', MODEL], out: join(tmp.dir, 'dir-input') };
      },
      /a-folder: is a directory, not a file; name a file in it instead \[E_INPUT_NOT_FOUND\]$/m,
    ],
    [
      'an --out below a regular file',
      async () => {
        const file = join(tmp.dir, 'plain-file');
        await writeFile(file, 'x');
        return { args: [input, '--model', MODEL], out: join(file, 'runs') };
      },
      /cannot write run folders to \S+plain-file\/runs: \S+plain-file is a file, not a folder; choose another --out \[E_OUTPUT\]$/m,
    ],
  ];
  for (const [what, setup, message] of cases) {
    it(`refuses ${what} with exit 2, before describe and before any run folder`, async () => {
      const { args, out } = await setup();
      const before = sim.stats.describeRequests;
      const r = await runCli(['score', ...args, '--out', out, '--json'], env());
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/resume:/);
      expect(sim.stats.describeRequests).toBe(before);
      expect(existsSync(out)).toBe(false);
    });
  }

  it('prints one line with a hint for an unknown option, not the help', async () => {
    const r = await runCli(['score', input, '--model', MODEL, '--out', join(tmp.dir, 'bogus'), '--bogus'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("batch-scorer: unknown option '--bogus' (see batch-scorer score --help) [E_USAGE]\n");
    expect(r.stdout).toBe('');
  });

  it('names an option given as a flag by the flag', async () => {
    const r = await runCli(['score', input, '--model', MODEL, '--out', join(tmp.dir, 'rate'), '--max-error-rate', '3'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('batch-scorer: score: --max-error-rate: must be at most 1 [E_USAGE]\n');
  });
});

describe('a failed run explains itself', () => {
  it('names the run, its folder and the command that resumes it, which does resume it', async () => {
    const out = join(tmp.dir, 'failed-plain');
    const r = await runCli(['score', withBadRows, '--model', MODEL, '--out', out, '--max-error-rate', '0'], env());
    expect(r.code).toBe(1);
    const { runId, folder, resume } = failureLines(r.stderr);
    // The count is the rows errors.jsonl holds, not the allowance.
    const quarantined = (await readFile(join(folder, 'errors.jsonl'), 'utf8')).trim().split('\n').length;
    expect(quarantined).toBeGreaterThan(0);
    expect(r.stderr).toMatch(
      new RegExp(
        `^batch-scorer: run \\S+ failed: ${quarantined} of the \\d+ rows read were quarantined, past --max-error-rate 0, which allows 0 of the input's \\d+ rows.* \\[E_ERROR_RATE\\]$`,
        'm',
      ),
    );
    expect(folder).toBe(join(out, runId));
    expect(resume).toBe(`batch-scorer score ${withBadRows} --model ${MODEL} --out ${out} --max-error-rate 0 --run-id ${runId}`);
    const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as { runId: string; state: string };
    expect(manifest).toMatchObject({ runId, state: 'failed' });

    // The command as printed (plain words here: the temp paths need no quotes) picks the same run up again.
    const again = await runCli(resume.split(' ').slice(1), env());
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('"msg":"resuming run"');
    expect(failureLines(again.stderr)).toEqual({ runId, folder, resume });
  });

  it('puts the run id, folder, error and resume command in the --json line', async () => {
    const out = join(tmp.dir, 'failed-json');
    const r = await runCli(['score', withBadRows, '--model', MODEL, '--out', out, '--max-error-rate', '0', '--run-id', 'bad-rows', '--json'], env());
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toEqual({
      runId: 'bad-rows',
      state: 'failed',
      folder: join(out, 'bad-rows'),
      error: { code: 'E_ERROR_RATE', message: expect.stringMatching(/^\d+ of the \d+ rows read were quarantined/) as string },
      resume: `batch-scorer score ${withBadRows} --model ${MODEL} --out ${out} --max-error-rate 0 --run-id bad-rows --json`,
    });
    expect(failureLines(r.stderr).runId).toBe('bad-rows');
  });

  it('gives no resume command for a run id that already succeeded', async () => {
    const args = ['score', input, '--model', MODEL, '--out', join(tmp.dir, 'done'), '--run-id', 'done', '--limit', '5'];
    expect((await runCli(args, env())).code).toBe(0);
    const r = await runCli(args, env());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^batch-scorer: run done already succeeded in \S+; choose another --run-id \[E_RUN_EXISTS\]$/m);
    expect(r.stderr).not.toMatch(/resume:/);
  });
});

describe('Ctrl-C during score', () => {
  let slow: Simulator;
  beforeAll(async () => {
    slow = await startSimulator({ latencyMs: 200 });
  });
  afterAll(() => slow.close());

  for (const [signal, exitCode] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`stops on ${signal} with exit ${exitCode}, naming the run, its folder and how to resume it`, async () => {
      const big = join(tmp.dir, 'big.csv');
      if (!existsSync(big)) await writeRentals(big, 3000);
      const out = join(tmp.dir, `stopped-${signal}`);
      const before = slow.stats.predictRequests;
      const cli = startCli(['score', big, '--model', MODEL, '--out', out, '--batch-size', '10', '--concurrency', '2'], { MODEL_SERVICE_URL: slow.url });
      // Scoring has begun once predict requests follow the probe.
      await waitFor('scoring to begin', () => slow.stats.predictRequests >= before + 4, 30_000);
      cli.child.kill(signal);
      const r: CliResult = { code: await cli.exited, stdout: cli.stdout(), stderr: cli.stderr() };
      expect(r.code).toBe(exitCode);
      expect(r.stderr).toMatch(new RegExp(`^batch-scorer: run \\S+ failed: stopped by ${signal} \\[E_ABORTED\\]$`, 'm'));
      const { runId, folder, resume } = failureLines(r.stderr);
      expect(folder).toBe(join(out, runId));
      expect(resume).toBe(`batch-scorer score ${big} --model ${MODEL} --out ${out} --batch-size 10 --concurrency 2 --run-id ${runId}`);
      expect(JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8'))).toMatchObject({ runId, state: 'failed', error: { code: 'E_ABORTED' } });
    });
  }
});

describe('a port another process holds', () => {
  it('simulate and serve exit 2 naming the address, the reason and what to change', async () => {
    const { createServer } = await import('node:net');
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const simulate = await runCli(['simulate', '--port', String(port)]);
      expect([simulate.code, simulate.stderr.trimEnd().split('\n').at(-1)]).toEqual([
        2,
        expect.stringMatching(
          new RegExp(`^batch-scorer: simulate: cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\): choose another --port .*\\[E_USAGE\\]$`),
        ),
      ]);
      const serve = await runCli(['serve', '--port', String(port)], { REDIS_URL: process.env.REDIS_URL });
      expect([serve.code, serve.stderr.trimEnd().split('\n').at(-1)]).toEqual([
        2,
        expect.stringMatching(
          new RegExp(`^batch-scorer: serve: cannot listen on 127\\.0\\.0\\.1:${port} \\(EADDRINUSE\\): choose another --host or --port \\[E_USAGE\\]$`),
        ),
      ]);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
