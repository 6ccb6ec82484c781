/**
 * Where a bench run's results go: .bench/results.json (every raw figure) and a Markdown block in
 * BENCHMARKS.md between its markers (only that block is replaced).
 */
import { readFile, writeFile } from 'node:fs/promises';
import * as prettier from 'prettier';
import type { Machine } from './machine.js';
import { formatValue, type SectionReport } from './report.js';

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';
const NEW_FILE = `# Benchmarks

The block below is written by \`npm run bench -- --full\` (bench/run.ts); a quick \`npm run bench\` writes it too, and says so.

${START}
${END}
`;

export interface BenchRun {
  mode: 'quick' | 'full';
  /** Only some sections ran (BENCH_SECTIONS): the others' tables in BENCHMARKS.md are kept as they were. */
  partial: boolean;
  scale: number;
  machine: Machine;
  sections: SectionReport[];
}

export async function writeResultsJson(path: string, run: BenchRun): Promise<void> {
  const sections = run.sections.map((s) => ({ id: s.id, title: s.title, error: s.error ?? null, figures: s.figures, notes: s.notes, raw: s.raw }));
  await writeFile(path, `${JSON.stringify({ ...run, sections }, null, 2)}\n`);
}

/** Replaces what is between the markers of `path` (creating the file with them if it is missing). */
export async function writeMarkdownBlock(path: string, run: BenchRun): Promise<void> {
  let text = await readFile(path, 'utf8').catch(() => NEW_FILE);
  if (!text.includes(START) || !text.includes(END)) text = `${text.trimEnd()}\n\n${START}\n${END}\n`;
  const before = text.slice(0, text.indexOf(START) + START.length);
  const after = text.slice(text.indexOf(END));
  const block = run.partial ? mergeSections(text.slice(before.length, text.indexOf(END)), run) : markdown(run);
  // Formatted as `npm run lint` checks it, so a bench run leaves the file ready to commit.
  const options = (await prettier.resolveConfig(path)) ?? {};
  await writeFile(path, await prettier.format(`${before}\n${block}\n${after}`, { ...options, filepath: path }));
}

function machineLine(run: BenchRun): string {
  const m = run.machine;
  return `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; Node ${m.node}; ${m.os}. ${m.date}, ${run.mode} sizes${run.scale === 1 ? '' : ` scaled by ${run.scale}`}.`;
}

function markdown(run: BenchRun): string {
  return [machineLine(run), ...run.sections.map(sectionMarkdown)].join('\n');
}

/**
 * The block of a partial run: the previous block's sections in their order, those that ran
 * replaced (each saying when and where it was measured), new ones appended.
 */
function mergeSections(previous: string, run: BenchRun): string {
  const parts = previous.split(/^(?=### )/m);
  const head = parts[0].trim();
  const fresh = new Map(run.sections.map((s) => [s.title, `${sectionMarkdown(s)}\n\n_${machineLine(run)} This section alone._`]));
  const kept = parts.slice(1).map((part) => {
    const title = part.slice(4, part.indexOf('\n')).trim();
    const replaced = fresh.get(title);
    fresh.delete(title);
    return replaced ?? part.trim();
  });
  return [head, ...kept, ...fresh.values()].join('\n\n');
}

function sectionMarkdown(s: SectionReport): string {
  const lines = ['', `### ${s.title}`, '', '| figure | value | target | result | runtime |', '| --- | --: | --- | --- | --- |'];
  for (const f of s.figures) lines.push(`| ${f.name} | ${formatValue(f.value, f.unit)} | ${f.target} | ${f.verdict} | ${f.runtime} |`);
  if (s.error) lines.push(`| **error** | ${s.error.replace(/\|/g, '\\|').replace(/\n/g, ' ')} | | ERROR | |`);
  if (s.notes.length > 0) lines.push('', ...s.notes.map((n) => `- ${n}`));
  return lines.join('\n');
}
