import { html, jsonScript, type Html, type HtmlValue } from './html.js';

/** Seconds between reloads of the page of a run that is still waiting or running. */
export const REFRESH_SECONDS = 5;

/** Where a page links to: the plugin's prefix (`/ui`), the queue dashboard, and the static assets (with their cache-busting query). */
export interface PageContext {
  prefix: string;
  queues: string;
  assets: { css: string; chart: string; script: string; icon: string };
}

/**
 * One chart as the page script draws it: `bars` (labels, values) for histograms and class counts,
 * `line` (points) for throughput, `trend` (labels, series) for measures over a pipeline's runs.
 * The id of its canvas is `canvas`.
 */
export interface ChartSpec {
  canvas: string;
  kind: 'bars' | 'line' | 'trend';
  label: string;
  labels?: string[];
  values?: number[];
  points?: { x: number; y: number }[];
  xTitle: string;
  yTitle: string;
  /** Throughput: each value holds over the interval up to its point. */
  stepped?: boolean;
  /** Histogram bars touch; class bars do not. */
  contiguous?: boolean;
  /** Counts on a logarithmic axis: where one bar holds nearly every row (equal answers) and the others would not show. */
  logarithmic?: boolean;
  color: ChartColor;
  /** Trends: lines of one value per label each (null: that run has none), and a note per label for the tooltip. */
  series?: { label: string; values: (number | null)[]; color: ChartColor }[];
  notes?: string[];
}

/** The colours a chart may take, as the stylesheet names them. */
export type ChartColor = 'blue' | 'violet' | 'teal' | 'green';

/** The id of the `<script type="application/json">` holding a page's ChartSpec[]. */
export const CHARTS_ELEMENT_ID = 'run-charts';

/** A whole page: the head (its refresh when `refresh`), the header's links, `body`, and the chart scripts when it has charts. */
export function page(ctx: PageContext, title: string, body: HtmlValue, options: { refresh?: boolean; charts?: ChartSpec[] } = {}): Html {
  const charts = options.charts ?? [];
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${options.refresh ? html`<meta http-equiv="refresh" content="${REFRESH_SECONDS}" />` : ''}
        <title>${title} · batch-scorer</title>
        <link rel="icon" href="${ctx.assets.icon}" type="image/svg+xml" />
        <link rel="stylesheet" href="${ctx.assets.css}" />
      </head>
      <body>
        <header class="top">
          <a class="brand" href="${ctx.prefix}/runs">batch-scorer</a>
          <nav><a href="${ctx.prefix}/runs">Runs</a><a href="${ctx.prefix}/pipelines">Pipelines</a><a href="${ctx.queues}">Queues</a></nav>
        </header>
        <main>${body}</main>
        ${
          charts.length > 0
            ? html`${jsonScript(CHARTS_ELEMENT_ID, charts)}
                <script src="${ctx.assets.chart}"></script>
                <script src="${ctx.assets.script}"></script>`
            : ''
        }
      </body>
    </html> `;
}

/** A page saying what went wrong: an unknown run (404) or a bad filter (400). */
export function renderMessage(ctx: PageContext, title: string, message: string): string {
  return page(
    ctx,
    title,
    html`<h1>${title}</h1>
      <p class="notice">${message}</p>
      <p><a href="${ctx.prefix}/runs">All runs</a></p>`,
  ).text;
}
