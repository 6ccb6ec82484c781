// The import graph of src/, read from the sources with TypeScript's pre-processor: which file
// imports which, folded into folders. test/unit/import-graph.test.ts holds the architecture's rules
// on it (doors, no cycles, where Redis and BullMQ may be imported) and the generated
// docs/reference/folders.md draws it, so the rules and the picture read the same graph.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The source tree the graph is read from. */
export const srcRoot = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Every .ts file under src/, as a path relative to it with forward slashes. */
export function sourceFiles(folder = srcRoot): string[] {
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
export function nodeOf(file: string): string {
  const slash = file.indexOf('/');
  return slash === -1 ? file : file.slice(0, slash);
}

/** The relative specifiers a source imports: static, type-only, re-exports and dynamic `import()` alike. */
export function relativeSpecifiers(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.map(({ fileName }) => fileName).filter((specifier) => specifier.startsWith('.'));
}

/** The packages a source imports, by name (`bullmq/x` is bullmq's): static, type-only, re-exports and dynamic alike. */
export function packagesImported(text: string): string[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:'))
    .map((specifier) => specifier.split('/', specifier.startsWith('@') ? 2 : 1).join('/'));
}

/** The src/ files a source at `file` imports; package imports are left out, as only relative specifiers reach other files under src/. */
export function importsIn(file: string, text: string): string[] {
  return relativeSpecifiers(text).map((specifier) => posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, '.ts'));
}

/** The src/ files a file imports. */
export function importsOf(file: string): string[] {
  return importsIn(file, readFileSync(join(srcRoot, file), 'utf8'));
}

/**
 * The imports of a source at `file` that pass a door: into a file of another folder but its
 * `index.ts` (top-level files such as `errors.ts` are their own doors), as `file -> target`.
 */
export function doorsPassed(file: string, text: string): string[] {
  return importsIn(file, text)
    .filter((target) => target.includes('/') && nodeOf(target) !== nodeOf(file) && target !== `${nodeOf(target)}/index.ts`)
    .map((target) => `${file} -> ${target}`);
}

/**
 * Libraries kept behind the folder that owns them: Redis and BullMQ in the queue folder and the
 * composition root that wires `serve`; the PostgreSQL client in the database folder.
 */
export const PACKAGE_HOMES: Readonly<Record<string, readonly string[]>> = {
  bullmq: ['queue', 'app'],
  ioredis: ['queue', 'app'],
  pg: ['database'],
  'pg-cursor': ['database'],
  'pg-query-stream': ['database'],
  'pg-copy-streams': ['database'],
};

/** The imports of a source at `file` of a package of PACKAGE_HOMES outside its homes, as `file -> package`. */
export function packagesOutsideHomes(file: string, text: string): string[] {
  return packagesImported(text)
    .filter((name) => PACKAGE_HOMES[name] !== undefined && !PACKAGE_HOMES[name].includes(nodeOf(file)))
    .map((name) => `${file} -> ${name}`);
}

/** The folder graph: each node with the nodes it imports from (itself left out), and one file import per edge as evidence. */
export function folderGraph(): Map<string, Map<string, string>> {
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
export function components(graph: Map<string, Map<string, string>>): string[][] {
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

/** The names a door (`<folder>/index.ts`) exports: its re-export lists and its own exported declarations. */
export function doorExports(folder: string): string[] {
  const text = readFileSync(join(srcRoot, folder, 'index.ts'), 'utf8');
  const file = ts.createSourceFile('index.ts', text, ts.ScriptTarget.Latest);
  return file.statements.flatMap((statement) => {
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      return statement.exportClause.elements.map((element) => element.name.text);
    }
    const exported = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (!exported) return [];
    if (ts.isVariableStatement(statement)) return statement.declarationList.declarations.map((d) => d.name.getText(file));
    const name = (statement as ts.DeclarationStatement).name;
    return name && ts.isIdentifier(name) ? [name.text] : [];
  });
}
