import { html, type HtmlValue } from './html.js';
import { integer, shortNumber } from './page-format.js';
import type { ChartColor, ChartSpec } from './page-layout.js';
import type { NumericSummary } from './run-page-data.js';

/** A quantile's row label: `p5`, `p50`, `p99.9`. */
function quantileLabel(p: number): string {
  return `p${shortNumber(p * 100)}`;
}

export function histogramChart(canvas: string, summary: NumericSummary, label: string, color: ChartColor): ChartSpec {
  return {
    canvas,
    kind: 'bars',
    label,
    labels: summary.histogram.map((b) => `${shortNumber(b.lo)} – ${shortNumber(b.hi)}`),
    values: summary.histogram.map((b) => b.count),
    xTitle: label,
    yTitle: 'rows',
    contiguous: true,
    color,
  };
}

/** Count, min, mean, max and quantiles of some summaries side by side, a column each; nothing without any. */
export function statsTable(columns: { name: string; s: NumericSummary }[]): HtmlValue {
  if (columns.length === 0) return '';
  const quantiles = [...new Set(columns.flatMap((c) => c.s.quantiles.map((q) => q.p)))].sort((a, b) => a - b);
  const statRow = (label: string, value: (s: NumericSummary) => number | undefined, format: (n: number) => string = shortNumber) =>
    html`<tr>
      <th>${label}</th>
      ${columns.map((c) => {
        const v = value(c.s);
        return html`<td class="num">${v === undefined ? '–' : format(v)}</td>`;
      })}
    </tr>`;
  return html`<table class="stats-table">
    <thead>
      <tr>
        <th></th>
        ${columns.map((c) => html`<th class="num">${c.name}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${statRow('count', (s) => s.count, integer)} ${statRow('min', (s) => s.min)} ${statRow('mean', (s) => s.mean)} ${statRow('max', (s) => s.max)}
      ${quantiles.map((p) => statRow(quantileLabel(p), (s) => s.quantiles.find((q) => q.p === p)?.value))}
    </tbody>
  </table>`;
}
