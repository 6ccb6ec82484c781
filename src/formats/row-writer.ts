import Papa from 'papaparse';

/** Output rows as text, in one of the two output formats. */
export interface RowWriter {
  /** The first line of the file (CSV header), or '' for JSON Lines. */
  header(): string;
  /** Lines for rows of input values merged with prediction values, each ending in "\n". */
  lines(rows: readonly { input: Record<string, unknown>; predictions: readonly unknown[] }[]): string;
}

/**
 * @param inputColumns the input's columns (CSV writes exactly these; JSON Lines keeps every key a row has)
 * @param predictionColumns names of the prediction values, in order
 */
export function createRowWriter(format: 'csv' | 'jsonl', inputColumns: readonly string[], predictionColumns: readonly string[]): RowWriter {
  if (format === 'jsonl') {
    return {
      header: () => '',
      lines: (rows) =>
        rows
          .map(({ input, predictions }) => {
            const out: Record<string, unknown> = { ...input };
            predictionColumns.forEach((c, i) => (out[c] = predictions[i] ?? null));
            return `${JSON.stringify(out)}\n`;
          })
          .join(''),
    };
  }
  const unparse = (data: unknown[][]) => `${Papa.unparse(data, { newline: '\n', header: false })}\n`;
  return {
    header: () => unparse([[...inputColumns, ...predictionColumns]]),
    lines: (rows) =>
      rows.length === 0 ? '' : unparse(rows.map(({ input, predictions }) => [...inputColumns.map((c) => csvText(input[c])), ...predictions.map(csvText)])),
  };
}

/** A value as CSV text: CSV input strings unchanged, JSON values as JSON, missing as empty. */
function csvText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
