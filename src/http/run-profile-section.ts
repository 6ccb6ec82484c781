import { html, type Html } from './html.js';
import { integer, shortNumber } from './page-format.js';
import type { ChartSpec } from './page-layout.js';
import type { PageManifest, PredictionProfile } from './run-page-data.js';
import { histogramChart, statsTable } from './summary-html.js';

/** The run page's prediction profile: a card per target, with its charts and summary. */
export function profileSection(manifest: PageManifest | undefined, charts: ChartSpec[]): Html {
  const profile = manifest?.profile;
  if (!profile) {
    const why = !manifest
      ? 'The prediction profile appears once the run is assembled.'
      : manifest.state !== 'succeeded'
        ? 'A run that did not succeed has no prediction profile; it is made when the run is assembled.'
        : 'This run has no prediction profile: some of its segments were scored by an earlier release (see its warnings).';
    return html`<section class="card">
      <h2>Predictions</h2>
      <p class="muted">${why}</p>
    </section>`;
  }
  return html`<section class="card">
    <h2>Predictions</h2>
    <p class="muted">Quantiles within ${shortNumber(profile.relativeAccuracy * 100)}% relative accuracy.</p>
    <div class="targets">${profile.targets.map((t, i) => targetCard(t, i, charts))}</div>
  </section>`;
}

function targetCard(t: PredictionProfile['targets'][number], i: number, charts: ChartSpec[]): Html {
  const figures: Html[] = [];
  const figure = (canvas: string, caption: string) =>
    html`<figure>
      <div class="chart"><canvas id="${canvas}" role="img" aria-label="${caption}"></canvas></div>
      <figcaption>${caption}</figcaption>
    </figure>`;
  if (t.kind === 'numeric' && t.numeric) {
    charts.push(histogramChart(`chart-prediction-${i}`, t.numeric, t.column, 'violet'));
    figures.push(figure(`chart-prediction-${i}`, `${t.column}: distribution of predictions`));
  }
  if (t.kind === 'categorical' && t.classes) {
    const other = t.otherClasses > 0 ? [{ value: '(other classes)', count: t.otherClasses }] : [];
    const classes = [...t.classes, ...other];
    charts.push({
      canvas: `chart-prediction-${i}`,
      kind: 'bars',
      label: t.column,
      labels: classes.map((c) => c.value),
      values: classes.map((c) => c.count),
      xTitle: t.column,
      yTitle: 'rows',
      color: 'teal',
    });
    figures.push(figure(`chart-prediction-${i}`, `${t.column}: rows per class`));
  }
  if (t.confidence) {
    charts.push(histogramChart(`chart-confidence-${i}`, t.confidence, 'confidence', 'green'));
    figures.push(figure(`chart-confidence-${i}`, `${t.column}: confidence`));
  }
  const columns = [...(t.numeric ? [{ name: 'prediction', s: t.numeric }] : []), ...(t.confidence ? [{ name: 'confidence', s: t.confidence }] : [])];
  return html`<article class="target" data-target="${t.target}">
    <h3>${t.target} <span class="muted">${t.column !== t.target ? html`column ${t.column} · ` : ''}${t.kind}</span></h3>
    <p class="muted">
      ${integer(t.count)} rows · ${integer(t.nulls)}
      null${t.kind === 'categorical' && t.classes ? html` · ${t.classes.length} classes shown${t.otherClasses > 0 ? html`, ${integer(t.otherClasses)} rows in other classes` : ''}` : ''}
    </p>
    <div class="figures">${figures}</div>
    ${statsTable(columns)}
  </article>`;
}
