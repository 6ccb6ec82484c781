import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const srcRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

/** Every .ts file under src/, as a path relative to it with forward slashes. */
function sourceFiles(folder = srcRoot): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(srcRoot, path).split(sep).join('/')] : [];
  });
}

/**
 * The node a file belongs to: its first folder under src/, or the file itself when it sits at
 * the top (`errors.ts`, `cli.ts`), so `cli.ts` and `cli/` stay apart.
 */
function nodeOf(file: string): string {
  const slash = file.indexOf('/');
  return slash === -1 ? file : file.slice(0, slash);
}

/** The relative specifiers a source imports: static, type-only, re-exports and dynamic `import()` alike. */
function relativeSpecifiers(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.map(({ fileName }) => fileName).filter((specifier) => specifier.startsWith('.'));
}

/** The packages a source imports, by name (`bullmq/x` is bullmq's): static, type-only, re-exports and dynamic alike. */
function packagesImported(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:'))
    .map((specifier) => specifier.split('/', specifier.startsWith('@') ? 2 : 1).join('/'));
}

/** The src/ files a source at `file` imports; package imports are left out, as only relative specifiers reach other files under src/. */
function importsIn(file: string, text: string): string[] {
  return relativeSpecifiers(text).map((specifier) => posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, '.ts'));
}

/** The src/ files a file imports. */
function importsOf(file: string): string[] {
  return importsIn(file, readFileSync(join(srcRoot, file), 'utf8'));
}

/**
 * The imports of a source at `file` that pass a door: into a file of another folder but its
 * `index.ts` (top-level files such as `errors.ts` are their own doors), as `file -> target`.
 */
function doorsPassed(file: string, text: string): string[] {
  return importsIn(file, text)
    .filter((target) => target.includes('/') && nodeOf(target) !== nodeOf(file) && target !== `${nodeOf(target)}/index.ts`)
    .map((target) => `${file} -> ${target}`);
}

/** Where Redis and BullMQ may be imported: the queue folder, and the composition root that wires `serve`. */
const QUEUE_PACKAGE_HOMES = ['queue', 'app'];

/** The bullmq or ioredis imports of a source at `file` outside QUEUE_PACKAGE_HOMES, as `file -> package`. */
function queuePackagesOutside(file: string, text: string): string[] {
  if (QUEUE_PACKAGE_HOMES.includes(nodeOf(file))) return [];
  return packagesImported(text)
    .filter((name) => name === 'bullmq' || name === 'ioredis')
    .map((name) => `${file} -> ${name}`);
}

/** The folder graph: each node with the nodes it imports from (itself left out), and one file import per edge as evidence. */
function folderGraph(): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of sourceFiles()) {
    const from = nodeOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const target of importsOf(file)) {
      const to = nodeOf(target);
      if (to !== from && !edges.has(to)) edges.set(to, `${file} -> ${target}`);
    }
  }
  return graph;
}

/** Strongly connected components of the graph (Tarjan's algorithm). */
function components(graph: Map<string, Map<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

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

  it('finds an import past a door, and bullmq or ioredis outside their homes, however they are imported', () => {
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
    ].join('\n');
    expect(queuePackagesOutside('http/server.ts', packages)).toEqual([
      'http/server.ts -> bullmq',
      'http/server.ts -> ioredis',
      'http/server.ts -> bullmq',
      'http/server.ts -> bullmq',
    ]);
    expect(queuePackagesOutside('queue/queues.ts', packages)).toEqual([]);
    expect(queuePackagesOutside('app/serve-app.ts', packages)).toEqual([]);
    // The real tree holds both kinds of import the rules tell apart.
    expect(sources.some(({ file, text }) => nodeOf(file) === 'queue' && packagesImported(text).includes('bullmq'))).toBe(true);
    expect(sources.some(({ file, text }) => nodeOf(file) !== 'scoring' && importsIn(file, text).includes('scoring/index.ts'))).toBe(true);
  });

  it("reaches another folder only through its door, the folder's index.ts", () => {
    const passed = sources.flatMap(({ file, text }) => doorsPassed(file, text));
    expect(passed.join('\n'), 'imports past a door').toBe('');
  });

  it('imports bullmq and ioredis only in queue/ and the composition root (app/)', () => {
    const outside = sources.flatMap(({ file, text }) => queuePackagesOutside(file, text));
    expect(outside.join('\n'), 'bullmq or ioredis outside their homes').toBe('');
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
