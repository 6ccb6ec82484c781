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

/** The src/ files a file imports; package imports are left out, as only relative specifiers reach other files under src/. */
function importsOf(file: string): string[] {
  return relativeSpecifiers(readFileSync(join(srcRoot, file), 'utf8')).map((specifier) =>
    posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, '.ts'),
  );
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

  it('finds the imports it checks: dynamic, type-only and re-exports included', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "export { c } from './c.js';",
      "const d = await import('./d.js');",
      "import { z } from 'zod';",
    ].join('\n');
    expect(relativeSpecifiers(text)).toEqual(['./a.js', '../b.js', './c.js', './d.js']);
    expect(importsOf('queue/worker.ts')).toContain('storage/storage-types.ts');
    expect(graph.get('scoring')?.has('formats')).toBe(true);
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
