import Papa from 'papaparse';

/** Output rows as text, in one of the two output formats. */
export interface RowWriter {
  /** The first line of the file (CSV header), or '' for JSON Lines. */
  header(): string;
  /**
   * Lines for rows of input values merged with prediction values, each ending in "\n". A JSON Lines
   * row's `text`, when given, is written as it was read, with the predictions added at its end.
   */
  lines(rows: readonly { input: Record<string, unknown>; text?: string; predictions: readonly unknown[] }[]): string;
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
          .map(({ input, text, predictions }) => {
            const added: Record<string, unknown> = {};
            predictionColumns.forEach((c, i) => (added[c] = predictions[i] ?? null));
            if (text === undefined) return `${JSON.stringify({ ...input, ...added })}\n`;
            // Written from the text as read: re-serialising would round numbers JSON.parse cannot hold (19-digit ids).
            const head = text.trimEnd().slice(0, -1).trimEnd();
            return `${head}${head.endsWith('{') ? '' : ','}${JSON.stringify(added).slice(1)}\n`;
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
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
