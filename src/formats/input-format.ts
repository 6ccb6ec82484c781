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

/** Parquet when the name ends in `.parquet` or `.pq`, or the bytes start with Parquet's magic `PAR1`. */
export function isParquet(name: string, head: Buffer): boolean {
  return /\.(parquet|pq)$/i.test(name) || head.subarray(0, 4).toString('latin1') === 'PAR1';
}
