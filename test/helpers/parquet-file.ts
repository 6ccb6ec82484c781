import { readFile } from 'node:fs/promises';
import { readParquetLayout, readParquetRows, type RangeRead } from '../../src/formats/parquet-input.js';

/** Every row of a local Parquet file, in file order, as the tool's own reader gives them (see readParquetRows). */
export async function readParquetFile(path: string): Promise<Record<string, unknown>[]> {
  const bytes = await readFile(path);
  const read: RangeRead = (start, end) => Promise.resolve(bytes.subarray(start, end));
  const layout = await readParquetLayout(read, bytes.length, path);
  const rows: Record<string, unknown>[] = [];
  for await (const group of readParquetRows(read, bytes.length, path, { first: 0, count: layout.rowGroups.length })) rows.push(...group);
  return rows;
}
