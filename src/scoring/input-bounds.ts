import { INFLATION_FLOOR_BYTES, limitError, type Limits } from '../config/index.js';
import type { BatchScorerError } from '../errors.js';
import type { ParquetBounds, RowBounds, RowOver } from '../formats/index.js';

/**
 * The deployment's bounds on an input (see LIMITS) as the readers in `formats/` take them: plain
 * numbers, and the errors and problems that name the setting passed, which only the wiring knows.
 */

/** MAX_FIELD_BYTES and MAX_ROW_BYTES as the splitter takes them. */
export function rowBounds(limits: Limits): RowBounds {
  return { maxFieldBytes: limits.fieldBytes, maxRowBytes: limits.rowBytes };
}

/** E_LIMIT for `row` (a name for it: `the row`, `data.csv: the header row`) past a bound, naming the setting it passed. */
export function rowOverError(over: RowOver, row: string): BatchScorerError {
  return over.bound === 'field'
    ? limitError('fieldBytes', over.limit, `${row}'s field of ${count(over.fieldBytes)} bytes`)
    : limitError('rowBytes', over.limit, `${row}'s ${count(over.rowBytes)} bytes`);
}

/** Why a row past a bound is quarantined, naming the setting it passed. */
export function rowOverProblem(over: RowOver): string {
  return rowOverError(over, 'the row').message;
}

/** MAX_PARQUET_FOOTER_BYTES and MAX_PARQUET_ROW_GROUPS as the Parquet reader takes them. */
export function parquetBounds(limits: Limits): ParquetBounds {
  return {
    maxFooterBytes: limits.parquetFooterBytes,
    maxRowGroups: limits.parquetRowGroups,
    refuse: (bound, what) =>
      bound === 'maxFooterBytes'
        ? limitError('parquetFooterBytes', limits.parquetFooterBytes, what)
        : limitError('parquetRowGroups', limits.parquetRowGroups, what),
  };
}

/** The most a gzipped file may inflate to, and the error of passing it (see inflationCap). */
export interface InflationCap {
  bytes: number;
  refuse: () => Error;
}

/**
 * How far a gzipped file of `compressedBytes` may inflate: MAX_INFLATED_BYTES, and
 * MAX_INFLATION_RATIO times its compressed bytes, but never less than INFLATION_FLOOR_BYTES for
 * the ratio. Known before a byte is inflated, so it is checked as the bytes come.
 */
export function inflationCap(limits: Limits, compressedBytes: number, name: string): InflationCap {
  const byRatio = Math.max(INFLATION_FLOOR_BYTES, limits.inflationRatio * compressedBytes);
  const bytes = Math.min(limits.inflatedBytes, byRatio);
  return {
    bytes,
    refuse: () =>
      bytes === limits.inflatedBytes
        ? limitError('inflatedBytes', bytes, `${name}: inflating it to more than ${count(bytes)} bytes`)
        : limitError(
            'inflationRatio',
            limits.inflationRatio,
            `${name}: inflating ${count(compressedBytes)} bytes to more than ${count(bytes)} (${Math.floor(bytes / compressedBytes)} times as many)`,
          ),
  };
}

/** A count as messages write it: 1,073,741,824. */
function count(n: number): string {
  return n.toLocaleString('en-US');
}
