import { isSettled, rowsPerSecond, RUN_STATES } from '../scoring/index.js';

import { type Pipeline, zonedIso } from '../triggers/index.js';
import { html, type Html, type HtmlValue } from './html.js';
import { RECENT_RUNS, type PipelinePageView, type PipelineRun, type PipelineSummary } from './pipeline-page-data.js';
import type { PageManifest } from './run-page-data.js';
import { formatDuration, integer, shortDateTime, shortNumber, stateBadge } from './page-format.js';
import { page, type ChartSpec, type PageContext } from './page-layout.js';
import { listHref, pager, resultNote } from './run-list-html.js';

/** The prediction quantiles a numeric target's trend draws, as its profile keeps them, with their lines' colours. */
export const TREND_QUANTILES = [
  { p: 0.05, label: 'p5', color: 'teal' },
  { p: 0.5, label: 'p50', color: 'violet' },
  { p: 0.95, label: 'p95', color: 'blue' },
] as const;

const pipelineHref = (ctx: PageContext, name: string, pageNumber = 1) =>
  `${ctx.prefix}/pipelines/${encodeURIComponent(name)}${pageNumber > 1 ? `?page=${pageNumber}` : ''}`;

/** How a pipeline starts its runs, short: its cron and time zone, or the folder and suffix it watches. */
function kindCell(p: Pipeline): Html {
  return p.kind === 'schedule'
    ? html`<span class="kind">schedule</span> <code>${p.schedule.cron}</code> <span class="muted">${p.schedule.tz}</span>`
    : html`<span class="kind">file drop</span>
        <code class="wrap">${p.trigger.prefix}</code>${p.trigger.suffix ? html` <span class="muted">*${p.trigger.suffix}</span>` : ''}`;
}

/**
 * A scheduled pipeline's next firing as its scheduler in Redis makes it, in UTC and on the
 * schedule's own clock; or, plainly, that Redis has no scheduler of it (it does not fire), or one
 * firing otherwise than jobs/*.yaml declares.
 */
function nextCell({ pipeline: p, next, scheduler }: PipelineSummary): Html {
  if (p.kind !== 'schedule') return html`<span class="muted">on each new file</span>`;
  const sync = html`<code>batch-scorer schedule sync</code>`;
  if (scheduler?.standing === 'missing') return html`<span data-scheduler="missing">not scheduled in Redis: it does not fire until ${sync}</span>`;
  const tz = scheduler?.tz ?? p.schedule.tz;
  const when = next
    ? html`${shortDateTime(next.toISOString())}${tz !== 'UTC' ? html`<div class="muted nowrap">${zonedIso(next, tz)}</div>` : ''}`
    : html`<span class="muted">none</span>`;
  if (scheduler?.standing !== 'differs') return when;
  return html`${when}
    <div class="muted" data-scheduler="differs">Redis fires it by <code>${scheduler.cron ?? '?'}</code> ${tz}, not as jobs/*.yaml declares: ${sync}</div>`;
}

function latestCell(ctx: PageContext, { latest }: PipelineSummary): Html {
  if (!latest) return html`<span class="muted">none on the queue</span>`;
  return html`${stateBadge(latest.state)} <a href="${ctx.prefix}/runs/${encodeURIComponent(latest.runId)}">${latest.runId}</a>
    <div class="nowrap muted">${shortDateTime(latest.finishedAt ?? latest.enqueuedAt)}</div>`;
}

/** The recent runs by state, each count linking to the run list narrowed to the pipeline and that state. */
function countsCell(ctx: PageContext, { pipeline, recent }: PipelineSummary): Html {
  if (recent.total === 0) return html`<span class="muted">–</span>`;
  return html`<span class="counts"
    >${RUN_STATES.filter((s) => recent.byState[s]).map(
      (s) => html`<a class="count count-${s}" href="${listHref(ctx, { pipeline: pipeline.name, state: s })}" title="${s}">${recent.byState[s]} ${s}</a>`,
    )}</span
  >`;
}

/** `/ui/pipelines`: every pipeline of `jobs/*.yaml`, how it starts, its next firing, its latest run and its recent runs by state. */
export function renderPipelineList(ctx: PageContext, summaries: PipelineSummary[]): string {
  const row = (s: PipelineSummary) =>
    html`<tr data-pipeline="${s.pipeline.name}">
      <td class="nowrap"><a href="${pipelineHref(ctx, s.pipeline.name)}">${s.pipeline.name}</a></td>
      <td>${kindCell(s.pipeline)}</td>
      <td class="nowrap">${s.pipeline.model}</td>
      <td><code class="wrap">${s.pipeline.output}</code></td>
      <td>${nextCell(s)}</td>
      <td class="latest">${latestCell(ctx, s)}</td>
      <td>${countsCell(ctx, s)}</td>
    </tr>`;
  const body = html`<h1>Pipelines</h1>
    ${
      summaries.length === 0
        ? html`<p class="empty">No pipelines are declared: serve reads them from <code>jobs/*.yaml</code> (JOBS_DIR or --jobs).</p>`
        : html`<table class="runs pipelines">
              <thead>
                <tr>
                  <th>Pipeline</th>
                  <th>Started by</th>
                  <th>Model</th>
                  <th>Output</th>
                  <th>Next firing</th>
                  <th>Latest run</th>
                  <th>Recent runs</th>
                </tr>
              </thead>
              <tbody>
                ${summaries.map(row)}
              </tbody>
            </table>
            <p class="muted">Recent runs: the last ${integer(RECENT_RUNS)} of each pipeline the queue keeps.</p>`
    }`;
  return page(ctx, 'Pipelines', body).text;
}

/** `/ui/pipelines/:name`: the pipeline's facts, charts over its runs on this page, and those runs. */
export function renderPipelinePage(ctx: PageContext, view: PipelinePageView): string {
  const { summary, runs } = view;
  const p = summary.pipeline;
  const charts = trendCharts(runs);
  const fact = (label: string, value: HtmlValue, id: string) =>
    html`<dt>${label}</dt>
      <dd id="pipeline-${id}">${value}</dd>`;
  const body = html`<div class="title">
      <h1>Pipeline <span class="run-id">${p.name}</span></h1>
    </div>
    <section class="card">
      <dl class="facts">
        ${fact('Started by', kindCell(p), 'kind')}
        ${p.kind === 'schedule' ? html`${fact('Input', html`<code class="wrap">${p.input}</code>`, 'input')} ${fact('Next firing', nextCell(summary), 'next')}` : ''}
        ${fact('Model', p.model, 'model')} ${fact('Output', html`<code class="wrap">${p.output}</code>`, 'output')}
        ${fact('Declared in', html`<code>${p.source.file}</code> <span class="muted">document ${p.source.document}</span>`, 'source')}
        ${fact('Latest run', latestCell(ctx, summary), 'latest')} ${fact('Recent runs', countsCell(ctx, summary), 'counts')}
      </dl>
      <p><a href="${listHref(ctx, { pipeline: p.name })}">Its runs in the run list</a></p>
    </section>
    ${chartsSection(charts)} ${runsSection(ctx, view)}`;
  return page(ctx, `Pipeline ${p.name}`, body, { refresh: runs.some((r) => !isSettled(r.status.state)), charts }).text;
}

function chartsSection(charts: ChartSpec[]): Html {
  if (charts.length === 0)
    return html`<section class="card">
      <h2>Over time</h2>
      <p class="muted">No finished run of this page has a manifest yet.</p>
    </section>`;
  return html`<section class="card">
    <h2>Over time</h2>
    <p class="muted">One point per finished run of this page that has a manifest, oldest first.</p>
    <div class="figures">
      ${charts.map(
        (c) =>
          html`<figure>
            <div class="chart"><canvas id="${c.canvas}" role="img" aria-label="${c.label}"></canvas></div>
            <figcaption>${c.label}</figcaption>
          </figure>`,
      )}
    </div>
  </section>`;
}

/** The page's runs that ended with a manifest, oldest first: the charts' points. */
function chartedRuns(runs: PipelineRun[]): { runId: string; at: string; manifest: PageManifest }[] {
  return runs
    .filter((r) => r.manifest)
    .map((r) => ({ runId: r.status.runId, at: r.status.enqueuedAt, manifest: r.manifest! }))
    .reverse();
}

/** A run's highest PSI over the columns its drift compared; null when it measured none. */
export function maxPsi(m: PageManifest): number | null {
  return m.drift && m.drift.columns.length > 0 ? Math.max(...m.drift.columns.map((c) => c.psi)) : null;
}

/** Quantile bands per numeric target, the highest PSI, and rows per second, over the runs of the page. */
function trendCharts(runs: PipelineRun[]): ChartSpec[] {
  const points = chartedRuns(runs);
  if (points.length === 0) return [];
  // To the second: a pipeline's runs may start minutes apart or less.
  const labels = points.map((r) => r.at.slice(5, 19).replace('T', ' '));
  const notes = points.map((r) => `run ${r.runId}`);
  const trend = (canvas: string, label: string, yTitle: string, series: NonNullable<ChartSpec['series']>, extra: string[] = notes): ChartSpec => ({
    canvas,
    kind: 'trend',
    label,
    labels,
    series,
    notes: extra,
    xTitle: 'enqueued (UTC)',
    yTitle,
    color: series[0].color,
  });
  const targets = [...new Set(points.flatMap((r) => (r.manifest.profile?.targets ?? []).filter((t) => t.numeric).map((t) => t.target)))];
  const charts = targets.map((target, i) =>
    trend(
      `chart-quantiles-${i}`,
      `${target}: predictions p5 / p50 / p95`,
      target,
      TREND_QUANTILES.map((q) => ({
        label: q.label,
        color: q.color,
        values: points.map((r) => r.manifest.profile?.targets.find((t) => t.target === target)?.numeric?.quantiles.find((x) => x.p === q.p)?.value ?? null),
      })),
    ),
  );
  if (points.some((r) => r.manifest.drift))
    charts.push(
      trend(
        'chart-psi',
        'drift: highest PSI of the run',
        'PSI',
        [{ label: 'max PSI', color: 'teal', values: points.map((r) => maxPsi(r.manifest)) }],
        points.map((r) => {
          const d = r.manifest.drift;
          if (!d) return `run ${r.runId}: drift not measured`;
          return `run ${r.runId}: ${d.level}${d.moved.length > 0 ? `, moved: ${d.moved.join(', ')}` : ''} (baseline ${d.baseline.runId})`;
        }),
      ),
    );
  charts.push(
    trend('chart-rate', 'rows read per second', 'rows/s', [{ label: 'rows/s', color: 'green', values: points.map((r) => rowsPerSecond(r.manifest)) }]),
  );
  return charts;
}

function driftCell(m: PageManifest | undefined): Html {
  const d = m?.drift;
  if (!d) return html`<span class="muted">–</span>`;
  return html`<span class="badge drift-${d.level}" title="baseline ${d.baseline.runId}">${d.level}</span>
    ${d.moved.length > 0 ? html`<div class="moved">${d.moved.join(', ')}</div>` : ''}`;
}

/** The runs table's columns: heading, and whether it holds numbers (right-aligned). */
const RUN_COLUMNS = [
  ['Run', false],
  ['State', false],
  ['Enqueued / finished', false],
  ['Rows scored', true],
  ['Duration', true],
  ['Rows/s', true],
  ['Drift', false],
] as const;

function runsSection(ctx: PageContext, { runs, page: pageNumber, older, summary }: PipelinePageView): Html {
  return html`<section class="card">
    <h2>Runs</h2>
    ${runs.length === 0 ? html`<p class="empty">No runs of this pipeline ${pageNumber > 1 ? `on page ${pageNumber}` : 'on the queue'}.</p>` : runsTable(ctx, runs)}
    ${pager(pageNumber, older, (n) => pipelineHref(ctx, summary.pipeline.name, n))}
  </section>`;
}

/** A run per row: its state and failure, times, rows, duration, rate and drift. */
function runsTable(ctx: PageContext, runs: PipelineRun[]): Html {
  const row = ({ status: r, manifest: m, problem }: PipelineRun) => {
    const rows = m?.counts ? m.counts.rowsScored : r.progress?.rowsDone;
    const finishedAt = r.finishedAt ? Date.parse(r.finishedAt) : undefined;
    const duration = m ? m.durationMs / 1000 : finishedAt ? (finishedAt - Date.parse(r.enqueuedAt)) / 1000 : undefined;
    const rate = m ? rowsPerSecond(m) : null;
    return html`<tr data-run="${r.runId}">
      <td><a href="${ctx.prefix}/runs/${encodeURIComponent(r.runId)}">${r.runId}</a></td>
      <td class="state-cell">${stateBadge(r.state)}${resultNote(r)}${problem ? html`<div class="reason">Could not read ${problem}</div>` : ''}</td>
      <td>
        <div class="nowrap">${shortDateTime(r.enqueuedAt)}</div>
        ${r.finishedAt ? html`<div class="nowrap muted">${shortDateTime(r.finishedAt)}</div>` : ''}
      </td>
      <td class="num rows">${rows === undefined ? '–' : integer(rows)}</td>
      <td class="num nowrap">${duration === undefined ? '–' : formatDuration(duration)}</td>
      <td class="num">${rate === null ? '–' : shortNumber(rate)}</td>
      <td class="drift-cell">${driftCell(m)}</td>
    </tr>`;
  };
  return html`<table class="runs pipeline-runs">
    <thead>
      <tr>
        ${RUN_COLUMNS.map(([label, num]) => html`<th class="${num ? 'num' : ''}">${label}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${runs.map(row)}
    </tbody>
  </table>`;
}
