import { html, type Html } from './html.js';
import { integer, shortNumber } from './page-format.js';
import type { ChartSpec, PageContext } from './page-layout.js';
import type { RunPageView } from './run-page-data.js';
import { histogramChart, statsTable } from './summary-html.js';

/**
 * Shadow scoring's comparison of the run's model with another (the manifest's `comparison`): per
 * target the agreement, the differences' histogram and quantiles and the interval ends' shifts,
 * then the rows that differ most side by side, read from comparison.json; nothing without one.
 */
export function comparisonSection(ctx: PageContext, { status, manifest, comparison: file }: RunPageView, charts: ChartSpec[]): Html {
  const comparison = manifest?.comparison;
  if (!comparison) return html``;
  const href = `${ctx.prefix}/runs/${encodeURIComponent(status.runId)}/files/${encodeURIComponent(comparison.file)}`;
  const rowsOf = (target: string) => (file && !('unread' in file) ? file.targets.find((t) => t.target === target)?.rows : undefined);
  // Answers as the models gave them: numbers exact (a rounded pair could look equal), classes as they are.
  const answer = (value: unknown): string =>
    typeof value === 'number'
      ? value.toLocaleString('en-US', { maximumFractionDigits: 6 })
      : typeof value === 'string'
        ? value
        : (JSON.stringify(value) ?? '–');
  const difference = (d: number, main: unknown) => {
    const signed = `${d > 0 ? '+' : ''}${answer(d)}`;
    return typeof main === 'number' && main !== 0
      ? html`${signed} <span class="muted">(${d > 0 ? '+' : ''}${shortNumber((d * 100) / Math.abs(main))}%)</span>`
      : signed;
  };
  const card = (t: (typeof comparison.targets)[number], i: number) => {
    const rows = rowsOf(t.target);
    const shifts = [
      ...(t.difference ? [{ name: 'difference', s: t.difference }] : []),
      ...(t.minShift ? [{ name: 'min shift', s: t.minShift }] : []),
      ...(t.maxShift ? [{ name: 'max shift', s: t.maxShift }] : []),
    ];
    // Numbers line up on the right; classes read as words.
    const align = t.difference ? 'num' : '';
    const agreement =
      t.agreement === null
        ? html`<span class="muted">none compared</span>`
        : `${(t.agreement * 100).toFixed(2)}% (${integer(t.agreed)} of ${integer(t.compared)})`;
    if (t.difference) charts.push({ ...histogramChart(`chart-difference-${i}`, t.difference, `${t.target}: other − this run`, 'blue'), logarithmic: true });
    return html`<article class="target" data-target="${t.target}">
      <h3>${t.target} <span class="muted">${t.difference ? 'numeric' : t.compared > 0 ? 'classes' : ''}</span></h3>
      <dl class="facts">
        <dt>Agreement</dt>
        <dd id="agreement-${i}">${agreement}</dd>
        <dt>Differing rows</dt>
        <dd>${integer(t.compared - t.agreed)}</dd>
      </dl>
      ${
        t.difference
          ? html`<div class="figures">
              <figure>
                <div class="chart"><canvas id="chart-difference-${i}" role="img" aria-label="${t.target}: distribution of the differences"></canvas></div>
                <figcaption>${t.target}: the other model's answer − this run's, row by row (rows on a log scale)</figcaption>
              </figure>
              ${statsTable(shifts)}
            </div>`
          : ''
      }
      <h4>The rows that differ ${t.difference ? 'most' : 'first'}</h4>
      ${
        !rows
          ? html`<p class="notice">Not shown: ${file && 'unread' in file ? file.unread : 'comparison.json could not be read (see above).'}</p>`
          : rows.length === 0
            ? html`<p class="muted">No row differs.</p>`
            : html`<table class="comparison-rows" id="comparison-rows-${i}">
                <thead>
                  <tr>
                    <th class="num">Row</th>
                    <th>Input</th>
                    <th class="${align}">This run <span class="model-name" title="${comparison.model}">${comparison.model}</span></th>
                    <th class="${align}">Other <span class="model-name" title="${comparison.other}">${comparison.other}</span></th>
                    ${t.difference ? html`<th class="num">Difference</th>` : ''}
                  </tr>
                </thead>
                <tbody>
                  ${rows.map(
                    (r) =>
                      html`<tr>
                        <td class="num">${integer(r.row)}</td>
                        <td class="input"><code title="${r.input}">${r.input}</code></td>
                        <td class="${align}">${answer(r.main)}</td>
                        <td class="${align}">${answer(r.other)}</td>
                        ${t.difference ? html`<td class="num nowrap">${r.difference === undefined ? '–' : difference(r.difference, r.main)}</td>` : ''}
                      </tr>`,
                  )}
                </tbody>
              </table>`
      }
    </article>`;
  };
  return html`<section class="card" id="comparison">
    <h2>Comparison with ${comparison.other}</h2>
    <dl class="facts">
      <dt>This run's model</dt>
      <dd>${comparison.model}</dd>
      <dt>Compared with</dt>
      <dd>${comparison.other}</dd>
      <dt>Unanswered rows</dt>
      <dd id="comparison-unanswered">${integer(comparison.unanswered)} <span class="muted">(the other model's request failed: not compared)</span></dd>
      <dt>File</dt>
      <dd><a href="${href}" download>${comparison.file}</a></dd>
    </dl>
    <div class="targets">${comparison.targets.map(card)}</div>
  </section>`;
}
