import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { useRentalsInput, useScoringFixture } from '../helpers/scoring.js';

const HOOK = fileURLToPath(new URL('../helpers/loaded-modules.mjs', import.meta.url));
const DIST = join(CLI, '..');

const fixture = useScoringFixture();
const rentals = useRentalsInput(25);

/**
 * How dist/cli.js starts: the environment and Node flags of its `#!/usr/bin/env -S ... node ...`
 * line, so that the run below is the installed command's own.
 */
async function shebang(): Promise<{ env: Record<string, string>; flags: string[] }> {
  const first = (await readFile(CLI, 'utf8')).split('\n', 1)[0];
  const words = first.replace(/^#!\/usr\/bin\/env -S /, '').split(/\s+/);
  const node = words.indexOf('node');
  expect(node, `dist/cli.js starts with ${first}`).toBeGreaterThan(-1);
  return { env: Object.fromEntries(words.slice(0, node).map((w) => w.split('=', 2) as [string, string])), flags: words.slice(node + 1) };
}

/**
 * The files of dist/ (relative to it) that outputs of the bundled command hold: the build bundles
 * them into dist/cli.js and dist/chunk-*.js and writes down which are where.
 */
async function bundledInputs(outputs: string[]): Promise<string[]> {
  const held = JSON.parse(await readFile(join(DIST, 'bundle-inputs.json'), 'utf8')) as Record<string, string[]>;
  return outputs.flatMap((file) => {
    const inputs = held[`dist/${file}`];
    expect(inputs, `dist/${file} is an output of the bundle`).toBeDefined();
    return inputs.filter((input) => input.startsWith('dist/')).map((input) => input.slice('dist/'.length));
  });
}

/** The modules a `score` run of the built command loads: the packages (by name) and the files of dist/ (relative to it) its bundle holds. */
async function scoreLoads(): Promise<{ packages: Set<string>; own: string[] }> {
  const { env, flags } = await shebang();
  const listed = join(fixture.dir, 'loaded.txt');
  const args = [...flags, '--import', pathToFileURL(HOOK).href, CLI, 'score', rentals.input, '--model', 'mindsdb/home_rentals_model', '--out', fixture.out];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env, MODEL_SERVICE_URL: fixture.sim.url, LOADED_MODULES_FILE: listed },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'close')) as [number | null];
  expect(code, stderr).toBe(0);
  const paths = (await readFile(listed, 'utf8'))
    .split('\n')
    .filter((url) => url.startsWith('file:'))
    .map((url) => fileURLToPath(url));
  const packages = new Set(paths.flatMap((path) => /[/\\]node_modules[/\\]((?:@[^/\\]+[/\\])?[^/\\]+)/.exec(path)?.[1]?.split(sep).join('/') ?? []));
  const own = paths.filter((path) => path.startsWith(DIST + sep)).map((path) => relative(DIST, path).split(sep).join('/'));
  return { packages, own: await bundledInputs(own) };
}

describe('what a score run loads', () => {
  it('loads no Redis, BullMQ, HTTP server, metrics or PostgreSQL code', async () => {
    const { packages, own } = await scoreLoads();
    // What the run needs is seen, so the list is the run's: a hook that saw nothing would pass the checks below.
    // (papaparse, zod and commander are bundled into the command, so they are among its own files.)
    expect([...packages]).toEqual(expect.arrayContaining(['undici', 'pino', '@datadog/sketches-js']));
    expect(own).toEqual(expect.arrayContaining(['cli.js', 'cli/score.js', 'scoring/index.js', 'scoring/score-run.js', 'service/index.js']));

    // pg too: a run writing files reaches no database, though config's checks import the database door.
    const forbidden = [...packages].filter(
      (name) => ['bullmq', 'ioredis', 'fastify', 'prom-client', 'pg', 'pg-copy-streams'].includes(name) || name.startsWith('@bull-board/'),
    );
    expect(forbidden, 'packages a score run must not load').toEqual([]);
    const adapters = own.filter((file) => /^(queue|http|metrics)\//.test(file) || file === 'app/serve-app.js');
    expect(adapters, 'files of dist/ a score run must not load').toEqual([]);
  });
});
