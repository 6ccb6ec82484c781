import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Manifest } from '../../src/scoring/manifest.js';
import { ENGINE_ERROR_VALUE } from '../../src/simulator/predict.js';
import type { Simulator } from '../../src/simulator/server.js';
import { runCli } from './cli.js';
import { startSimulator, tempDir } from './scoring.js';

/** The model rescore tests score with. */
export const RESCORE_MODEL = 'mindsdb/home_rentals_model';

/** A line of errors.jsonl with the value the engine failed on corrected in place. */
export const corrected = (line: string) => line.replace(`"location":"${ENGINE_ERROR_VALUE}"`, '"location":"good"');

/** A CLI run's exit code and output, and the rows and requests the simulator received meanwhile. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  rowsSent: number;
  requests: number;
}

/** What a rescore test file works with: two simulators, a temp folder, and the CLI run against them. */
export interface RescoreFixture {
  /** The simulator, whose engine refuses rows holding ENGINE_ERROR_VALUE. */
  sim: Simulator;
  /** The same models with the engine fixed: it reads the value it failed on as any other. */
  fixed: Simulator;
  /** The temp folder, removed after the file's tests. */
  dir: string;
  /** The run folders' --out (`<dir>/out`). */
  out: string;
  /** Runs the built CLI against a simulator (with `env` besides); answers its exit code, output, and the rows and requests the simulator received meanwhile. */
  cli: (args: string[], service?: Simulator, env?: Record<string, string>) => Promise<CliRun>;
  /** `score` of `input` into `<out>/<runId>` through the CLI with the fixture's options and `options`, which must succeed; answers its manifest. */
  score: (input: string, runId: string, options?: string[], service?: Simulator) => Promise<Manifest>;
  /** The manifest of `<out>/<runId>`. */
  manifest: (runId: string) => Promise<Manifest>;
  /** A copy of a run's errors.jsonl with each line passed through `edit` (undefined drops the line), written as `<dir>/<name>`; answers its path. */
  editedErrors: (runId: string, name: string, edit: (line: string, k: number) => string | undefined) => Promise<string>;
}

/**
 * The fixture of a rescore test file (see RescoreFixture), set up before its tests and removed
 * after them; every `score` gets `options` (segments and batches, say) before its own.
 */
export function useRescoreFixture(options: string[]): RescoreFixture {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const f = {} as RescoreFixture;
  beforeAll(async () => {
    [f.sim, f.fixed, tmp] = await Promise.all([startSimulator(), startSimulator({ engineErrors: false }), tempDir()]);
    f.dir = tmp.dir;
    f.out = join(tmp.dir, 'out');
  });
  afterAll(() => Promise.all([f.sim.close(), f.fixed.close(), tmp.cleanup()]));
  f.cli = async (args, service = f.sim, env = {}) => {
    const [rows, requests] = [service.stats.predictRowsReceived, service.stats.predictRequests];
    const result = await runCli(args, { MODEL_SERVICE_URL: service.url, LOG_LEVEL: 'warn', ...env });
    return { ...result, rowsSent: service.stats.predictRowsReceived - rows, requests: service.stats.predictRequests - requests };
  };
  f.manifest = async (runId) => JSON.parse(await readFile(join(f.out, runId, 'manifest.json'), 'utf8')) as Manifest;
  f.score = async (input, runId, more = [], service = f.sim) => {
    const r = await f.cli(['score', input, '--model', RESCORE_MODEL, '--out', f.out, '--run-id', runId, ...options, ...more], service);
    expect(r.code, r.stderr).toBe(0);
    return f.manifest(runId);
  };
  f.editedErrors = async (runId, name, edit) => {
    const lines = (await readFile(join(f.out, runId, 'errors.jsonl'), 'utf8')).split('\n').filter((l) => l !== '');
    const path = join(f.dir, name);
    await writeFile(path, lines.flatMap((l, k) => edit(l, k) ?? []).join('\n') + '\n');
    return path;
  };
  return f;
}
