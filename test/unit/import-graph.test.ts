import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  components,
  doorsPassed,
  folderGraph,
  importsIn,
  importsOf,
  nodeOf,
  packagesImported,
  packagesOutsideHomes,
  relativeSpecifiers,
  sourceFiles,
  srcRoot,
} from '../../scripts/source-graph.js';

describe('import graph of src/', () => {
  const graph = folderGraph();
  const sources = sourceFiles().map((file) => ({ file, text: readFileSync(join(srcRoot, file), 'utf8') }));

  it('finds the imports it checks: dynamic, type-only and re-exports included', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "export { c } from './c.js';",
      "const d = await import('./d.js');",
      "import { z } from 'zod';",
    ].join('\n');
    expect(relativeSpecifiers(text)).toEqual(['./a.js', '../b.js', './c.js', './d.js']);
    expect(importsOf('queue/worker.ts')).toContain('storage/index.ts');
    expect(graph.get('scoring')?.has('formats')).toBe(true);
  });

  it('finds an import past a door, and a kept library outside its home, however they are imported', () => {
    const past = [
      "import { a } from '../queue/producer.js';",
      "import type { B } from '../queue/index.js';",
      "import { c } from './webhooks.js';",
      "import { d } from '../errors.js';",
      "export { e } from '../scoring/run-file.js';",
      "const f = await import('../http/server.js');",
    ].join('\n');
    expect(doorsPassed('cli/score.ts', past)).toEqual([
      'cli/score.ts -> queue/producer.ts',
      'cli/score.ts -> scoring/run-file.ts',
      'cli/score.ts -> http/server.ts',
    ]);
    expect(doorsPassed('cli.ts', "import { p } from './cli/program.js';\nimport { q } from './cli/index.js';")).toEqual(['cli.ts -> cli/program.ts']);
    expect(doorsPassed('queue/worker.ts', "import { r } from './worker-options.js';")).toEqual([]);

    const packages = [
      "import type { Queue } from 'bullmq';",
      "import { Redis } from 'ioredis';",
      "export type { Job } from 'bullmq/dist/esm/classes/job.js';",
      "const m = await import('bullmq');",
      "import { z } from 'zod';",
      "import { createHash } from 'node:crypto';",
      "import pg from 'pg';",
    ].join('\n');
    expect(packagesOutsideHomes('http/server.ts', packages)).toEqual([
      'http/server.ts -> bullmq',
      'http/server.ts -> ioredis',
      'http/server.ts -> bullmq',
      'http/server.ts -> bullmq',
      'http/server.ts -> pg',
    ]);
    expect(packagesOutsideHomes('queue/queues.ts', packages)).toEqual(['queue/queues.ts -> pg']);
    expect(packagesOutsideHomes('app/serve-app.ts', packages)).toEqual(['app/serve-app.ts -> pg']);
    expect(packagesOutsideHomes('database/database-client.ts', "import pg from 'pg';")).toEqual([]);
    // The real tree holds both kinds of import the rules tell apart.
    expect(sources.some(({ file, text }) => nodeOf(file) === 'queue' && packagesImported(text).includes('bullmq'))).toBe(true);
    expect(sources.some(({ file, text }) => nodeOf(file) !== 'scoring' && importsIn(file, text).includes('scoring/index.ts'))).toBe(true);
  });

  it("reaches another folder only through its door, the folder's index.ts", () => {
    const passed = sources.flatMap(({ file, text }) => doorsPassed(file, text));
    expect(passed.join('\n'), 'imports past a door').toBe('');
  });

  it('imports bullmq and ioredis only in queue/ and app/, and the PostgreSQL client only in database/', () => {
    const outside = sources.flatMap(({ file, text }) => packagesOutsideHomes(file, text));
    expect(outside.join('\n'), 'kept libraries outside their homes').toBe('');
  });

  it('has no cycle between folders', () => {
    const cycles = components(graph)
      .filter((component) => component.length > 1)
      .map((component) => {
        const inside = new Set(component);
        const edges = component.flatMap((from) => [...graph.get(from)!].filter(([to]) => inside.has(to)).map(([, evidence]) => `  ${evidence}`));
        return [`cycle ${component.join(' <-> ')}:`, ...edges].join('\n');
      });
    expect(cycles.join('\n'), 'folders that import each other').toBe('');
  });

  it('keeps scoring/ free of the adapters and commands', () => {
    const forbidden = ['queue', 'http', 'cli', 'cli.ts', 'metrics', 'notify', 'lineage', 'triggers'];
    const reached = [...(graph.get('scoring') ?? [])].filter(([to]) => forbidden.includes(to)).map(([, evidence]) => evidence);
    expect(reached).toEqual([]);
  });
});
