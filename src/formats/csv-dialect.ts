import { excerpt } from '../text-excerpt.js';

/**
 * How a CSV file separates and quotes its fields. Both are single ASCII characters: the row
 * splitter works on bytes, and an ASCII byte never occurs inside a multi-byte UTF-8 character,
 * so splitting stays safe (input in other encodings is decoded to UTF-8 before it is split).
 */
export interface CsvDialect {
  /** The field separator: one ASCII character, not CR, LF or `"` (`,`, `;`, a tab, `|`). */
  delimiter: string;
  /** The quote that wraps fields holding delimiters, quotes or line feeds; doubled inside them to escape it. One ASCII character, not CR or LF. */
  quote: string;
}

/** RFC 4180: comma-separated, double-quoted. */
export const DEFAULT_DIALECT: CsvDialect = Object.freeze({ delimiter: ',', quote: '"' });

const TAB_NAME = /\.(tsv|tab)(\.gz)?$/i;

/**
 * Throws an Error saying what is wrong when the delimiter or quote is not one ASCII character,
 * is CR or LF (they end rows), when both are the same (a field could not be told from a quote), or
 * when the delimiter is `"`, which papaparse does not take. Answers the dialect.
 * The message names the part (`delimiter`, `quote`), not a flag: the caller knows the flag.
 */
export function checkDialect(d: CsvDialect): CsvDialect {
  checkChar('delimiter', d.delimiter);
  checkChar('quote', d.quote);
  // papaparse quietly reads a `"` delimiter as a comma.
  if (d.delimiter === '"') throw new Error(`the delimiter cannot be ${show('"')}; use it as the quote or pick another delimiter`);
  if (d.delimiter === d.quote) throw new Error(`the delimiter and the quote are both ${show(d.quote)}; they must differ`);
  return d;
}

/**
 * The dialect for a file: what was given, and for `.tsv` / `.tab` names (before any `.gz`) a tab
 * delimiter unless one was given. Not checked: pass the result to checkDialect.
 */
export function dialectForName(name: string, given: Partial<CsvDialect>): CsvDialect {
  const delimiter = given.delimiter ?? (TAB_NAME.test(name) ? '\t' : DEFAULT_DIALECT.delimiter);
  return { delimiter, quote: given.quote ?? DEFAULT_DIALECT.quote };
}

/** True for `.tsv` / `.tab` names, gzipped or not: tab-separated values are CSV with another delimiter. */
export function isTabSeparatedName(name: string): boolean {
  return TAB_NAME.test(name);
}

function checkChar(what: string, value: string): void {
  if (typeof value !== 'string' || value.length !== 1) {
    throw new Error(`the ${what} must be exactly one character, not ${typeof value === 'string' ? show(value) : String(value)}`);
  }
  const code = value.charCodeAt(0);
  if (code > 0x7f) throw new Error(`the ${what} must be an ASCII character, not ${show(value)}`);
  if (value === '\r' || value === '\n') throw new Error(`the ${what} cannot be ${show(value)}: line endings end rows`);
}

/** A character as a message can show it: quoted, with tabs and line endings spelled out (a long text cut short). */
function show(value: string): string {
  return excerpt(JSON.stringify(value));
}
