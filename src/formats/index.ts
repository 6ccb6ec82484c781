/** File formats: row splitting, CSV dialects, text encodings, CSV/JSON Lines and Parquet reading and writing. */

// What an input is: gzip, Parquet, CSV or JSON Lines; binary files named in a refusal.
export { detectSyntax, isGzip, isParquet } from './input-format.js';
export { describeBinary } from './binary-sniff.js';

// Text: encodings, UTF-8 checks, CSV dialects.
export { checkEncoding, decodeToUtf8, encodeFromUtf8, isUtf8 } from './text-encoding.js';
export { Utf8Check } from './utf8-check.js';
export { checkDialect, DEFAULT_DIALECT, dialectForName, type CsvDialect } from './csv-dialect.js';

// Reading rows: splitting bytes into rows, parsing them, bounding JSON nesting.
export { RowSplitter, splitRawRows, type RawRow, type RowBounds, type RowOver } from './row-splitter.js';
export { csvRecord, isQuotedField, jsonKeys, MAX_ROW_DEPTH, parseCsvHeader, parseRows, quotedFieldBounds, readTextRow, type InputRow } from './row-parser.js';
export { NestedTooDeep, nestedDeeperThan, textNestedDeeperThan } from './json-depth.js';
export { memberText } from './json-member-text.js';
export { EXACT_POWERS_OF_TEN } from './powers-of-ten.js';

// Writing rows.
export { createRowWriter, csvRowText, ROW_NUMBER_COLUMN, type RowWriter, type WriterRow } from './row-writer.js';
export { ByteWriter } from './byte-writer.js';

// Parquet: reading (hyparquet, itself loaded when a Parquet file is read) and writing.
export type { ParquetBounds } from './parquet-footer.js';
export { PARQUET_VALUE_TYPES, readParquetLayout, readParquetRows, type ParquetValueType } from './parquet-input.js';
export type { ParquetOutput, ParquetOutputColumn } from './parquet-output.js';
/** The Parquet writer (hyparquet-writer), loaded only by a run that writes Parquet. */
export async function loadParquetOutput() {
  const { createParquetOutput } = await import('./parquet-output.js');
  return { createParquetOutput };
}
