// The last step of `npm run build`: bundles the compiled command (dist/cli.js and what it imports)
// with esbuild into dist/cli.js and chunks beside it (dist/chunk-*.js), one chunk set per command
// as each command's module is still loaded only when it runs.
//
// Why: Node resolved, read and linked the command's 400-odd modules one by one before a run could
// begin (about 200 ms before `score` could ask anything of the service); bundled, a `score` starts
// about 50 ms sooner and holds about 3 MiB less heap after a full collection (module records, and
// each module's context and source), which every later collection no longer marks. Measured by hand
// on this round's machine; the bench's latency and memory sections show the result (BENCHMARKS.md).
//
// Bundled: our own code, and the dependencies that are plain JavaScript read at load. Kept as
// packages: those that find files of their own at run time (BullMQ's Lua scripts, pino's worker,
// the UI's assets), load native or optional parts, or are only ever loaded lazily (PostgreSQL,
// Parquet, S3, the HTTP server). The compiled files stay in dist/ too: tests load some of them alone.
import { chmod, readdir, rm, writeFile } from 'node:fs/promises';
import * as esbuild from 'esbuild';

const BUNDLED = new Set(['zod', 'commander', 'papaparse', 'picomatch', 'p-limit', 'yocto-queue', 'iconv-lite', 'safer-buffer', 'close-with-grace']);

/** The package a bare specifier names (`@scope/name` or `name`). */
const packageOf = (specifier) => specifier.split('/', specifier.startsWith('@') ? 2 : 1).join('/');

// The last build's chunks go first: their names are their contents' hashes, so a rebuild left them
// beside the new ones, and they went into the package.
for (const name of await readdir('dist')) if (/^chunk-[A-Z0-9]+\.js$/.test(name)) await rm(`dist/${name}`);

const { metafile } = await esbuild.build({
  entryPoints: ['dist/cli.js'],
  outdir: 'dist',
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  chunkNames: 'chunk-[hash]',
  platform: 'node',
  target: 'node24',
  format: 'esm',
  logLevel: 'warning',
  metafile: true,
  // CommonJS packages bundled into ES modules call require() for Node's own modules.
  banner: { js: "import { createRequire as createRequireOfBundle } from 'node:module'; const require = createRequireOfBundle(import.meta.url);" },
  plugins: [
    {
      name: 'packages-kept',
      setup(build) {
        build.onResolve({ filter: /^[^./]/ }, ({ path }) => (BUNDLED.has(packageOf(path)) ? undefined : { path, external: true }));
      },
    },
  ],
});
await chmod('dist/cli.js', 0o755);
// Which compiled files each output holds: a test reads it to tell what a command loads.
const outputs = Object.fromEntries(Object.entries(metafile.outputs).map(([file, { inputs }]) => [file, Object.keys(inputs)]));
await writeFile('dist/bundle-inputs.json', `${JSON.stringify(outputs, null, 1)}\n`);
