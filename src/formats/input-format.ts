import { isTabSeparatedName } from './csv-dialect.js';
import type { RowSyntax } from './row-splitter.js';

/** Gzipped when the name ends in `.gz` or the bytes start with gzip's magic number. */
export function isGzip(name: string, head: Buffer): boolean {
  return name.toLowerCase().endsWith('.gz') || (head[0] === 0x1f && head[1] === 0x8b);
}

/**
 * The row syntax from the name (`.csv`, `.tsv`, `.tab`, `.jsonl`, `.ndjson`, before any `.gz`) or, for other
 * names, from the first decompressed bytes: a `{` starts a JSON Lines file.
 */
export function detectSyntax(name: string, head: Buffer): RowSyntax {
  const bare = name.toLowerCase().replace(/\.gz$/, '');
  if (bare.endsWith('.jsonl') || bare.endsWith('.ndjson')) return 'jsonl';
  if (bare.endsWith('.csv') || isTabSeparatedName(bare)) return 'csv';
  return head
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
    .startsWith('{')
    ? 'jsonl'
    : 'csv';
}
