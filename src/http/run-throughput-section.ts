import { html, type Html } from './html.js';
import type { ChartSpec } from './page-layout.js';
import type { RunPageView } from './run-page-data.js';
import { FOLDER_ONLY } from './run-segments-section.js';

/** The run page's throughput: rows per second over the run, as a chart. */
export function throughputSection(view: RunPageView, charts: ChartSpec[]): Html {
  if (view.throughput.length === 0)
    return html`<section class="card">
      <h2>Throughput</h2>
      <p class="muted">${view.folderOnly ? FOLDER_ONLY : 'No throughput samples yet.'}</p>
    </section>`;
  charts.push({
    canvas: 'chart-throughput',
    kind: 'line',
    label: 'rows/s',
    // Each rate holds over the interval that ends at its point: drawn as steps from the start.
    points: [{ x: 0, y: view.throughput[0].rowsPerSecond }, ...view.throughput.map((p) => ({ x: p.seconds, y: p.rowsPerSecond }))],
    xTitle: 'seconds since start',
    yTitle: 'rows/s',
    stepped: true,
    color: 'blue',
  });
  return html`<section class="card">
    <h2>Throughput</h2>
    <div class="chart wide"><canvas id="chart-throughput" role="img" aria-label="rows per second over time"></canvas></div>
  </section>`;
}
