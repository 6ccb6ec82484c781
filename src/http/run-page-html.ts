import {
  capNote,
  describeTrigger,
  isSettled,
  type ObjectVersion,
  resultNotes,
  RUN_STATES,
  type RunState,
  type RunTrigger,
  shownRate,
} from '../scoring/index.js';
import type { RunStatus } from '../queue/index.js';
import { excerpt, MESSAGE_BYTES, VALUE_BYTES } from '../text-excerpt.js';
import { html, jsonScript, type Html, type HtmlValue } from './html.js';
import { notificationsSection } from './notifications-section.js';
import type { NumericSummary, PageManifest, PredictionProfile, RunListFilter, RunListPage, RunPageView, SegmentCell } from './run-page-data.js';

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

export type ChartColor = 'blue' | 'violet' | 'teal' | 'green';

/** The id of the `<script type="application/json">` holding a page's ChartSpec[]. */
export const CHARTS_ELEMENT_ID = 'run-charts';

const dateTime = (iso: string | undefined) => (iso ? html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>` : '–');
/** A date and time on one line for the run list, to the minute (`2026-11-25 14:03`); the full time in its title. */
export const shortDateTime = (iso: string | undefined) =>
  iso ? html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time>` : '–';
/** A count, exact, with thousands separators: counts are never rounded (see shortNumber). */
export const integer = (n: number) => Math.round(n).toLocaleString('en-US');

/** Characters of a location or model the run list shows at most; longer ones lose their middle. */
const LIST_TEXT_CHARS = 28;
/** Bytes of a failed run's reason the run list quotes; its page shows up to MESSAGE_BYTES. */
const LIST_REASON_BYTES = 160;

/**
 * Text for a narrow cell of the run list: `text` itself when short, else its beginning and end
 * around an ellipsis (both ends of a location tell most: its bucket and its file); the whole, as
 * far as VALUE_BYTES, in its title.
 */
function cutText(text: string): Html {
  const whole = excerpt(text, VALUE_BYTES);
  const chars = Array.from(whole);
  const head = Math.floor((LIST_TEXT_CHARS - 1) / 2);
  const shown = chars.length <= LIST_TEXT_CHARS ? whole : `${chars.slice(0, head).join('')}…${chars.slice(head + 1 - LIST_TEXT_CHARS).join('')}`;
  return html`<span class="cut" title="${whole}">${shown}</span>`;
}

/**
 * What a list says under a run's state: its quarantined rows and its result's notes (see resultNotes), and for a run
 * that did not succeed its error's code and a short excerpt of its message, never the whole; for a
 * job that failed without a result (it stalled), BullMQ's reason.
 */
export function resultNote(r: Pick<RunStatus, 'result' | 'failedReason' | 'state'>): HtmlValue {
  const { result } = r;
  if (!result) return r.failedReason ? html`<div class="reason"><code>no code</code> ${excerpt(r.failedReason, LIST_REASON_BYTES)}</div>` : '';
  const error =
    result.error && r.state !== 'succeeded'
      ? html`<div class="reason"><code>${result.error.code}</code> ${excerpt(result.error.message, LIST_REASON_BYTES)}</div>`
      : '';
  const quarantined = result.counts?.rowsQuarantined;
  const facts = [quarantined ? `${quarantined} quarantined` : undefined, capNote(result), ...resultNotes(result)].filter((f) => f !== undefined);
  return html`${error}${facts.length > 0 ? html`<div class="result muted">${facts.join('; ')}</div>` : ''}`;
}

/** A measure (a quantile, mean, min, max, histogram bound) with at most 4 significant digits; never a count, which `integer` shows exact. */
export function shortNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n !== 0 && Math.abs(n) < 1e-3) return n.toExponential(2);
  return Number(n.toPrecision(4)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** A run's rows per second as `status` and the pipeline pages say it (see shownRate). */
function rateOf(r: Pick<RunStatus, 'result' | 'progress'>): string {
  const rate = shownRate(r);
  return rate === undefined ? '–' : integer(rate);
}

/** A run state's coloured badge; a state this release does not know still shows, in grey. */
export function stateBadge(state: string): Html {
  const known = (RUN_STATES as readonly string[]).includes(state) ? state : 'unknown';
  return html`<span class="badge badge-${known}">${state}</span>`;
}

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

function progressBar(done: number, total: number): Html {
  return html`<progress value="${done}" max="${Math.max(total, 1)}">${total > 0 ? Math.floor((done * 100) / total) : 0}%</progress>`;
}

/** The run list's address with these filters and page (`/ui/runs?state=failed&pipeline=nightly&page=2`). */
export function listHref(ctx: PageContext, filter: RunListFilter): string {
  const query = new URLSearchParams();
  if (filter.state) query.set('state', filter.state);
  if (filter.pipeline) query.set('pipeline', filter.pipeline);
  if (filter.page !== undefined && filter.page > 1) query.set('page', String(filter.page));
  const text = query.toString();
  return `${ctx.prefix}/runs${text ? `?${text}` : ''}`;
}

/** Links to the newer and older pages of a list, when there are any; `href(n)` is page n's address. */
export function pager(pageNumber: number, older: boolean, href: (n: number) => string): HtmlValue {
  if (pageNumber === 1 && !older) return '';
  return html`<nav class="pages" id="pages">
    ${pageNumber > 1 ? html`<a class="pill" rel="prev" href="${href(pageNumber - 1)}">← newer</a>` : ''}
    <span class="muted">page ${pageNumber}</span>
    ${older ? html`<a class="pill" rel="next" href="${href(pageNumber + 1)}">older →</a>` : ''}
  </nav>`;
}

/** What started a run, short, for the list: its kind, and its pipeline linking to that pipeline's page. */
function startedBy(ctx: PageContext, trigger: RunTrigger | undefined): Html {
  if (!trigger) return html`<span class="muted" title="not recorded">–</span>`;
  const kind = trigger.kind === 'cli' ? `cli ${trigger.command}` : trigger.kind;
  const pipeline = 'pipeline' in trigger ? html` <a href="${ctx.prefix}/pipelines/${encodeURIComponent(trigger.pipeline)}">${trigger.pipeline}</a>` : '';
  return html`<span title="${describeTrigger(trigger)}">${kind}${pipeline}</span>`;
}

/** A run's priority in the list, said only when it is not `normal`: the exceptions are what an operator looks for. */
function priorityMark(r: RunStatus): Html | '' {
  return r.priority === 'normal' ? '' : html` <span class="muted priority" title="priority">${r.priority}</span>`;
}

/** `/ui/runs`: a page of the recent runs, newest first, narrowed to a state and a pipeline when `filter` says so. */
export function renderRunList(ctx: PageContext, list: RunListPage, filter: RunListFilter = {}): string {
  const { runs, older } = list;
  const { state, pipeline, page: pageNumber = 1 } = filter;
  // A state filter keeps the pipeline filter, and the other way round.
  const stateFilter = (label: string, value?: RunState) =>
    html`<a class="pill${value === state ? ' current' : ''}" href="${listHref(ctx, { state: value, pipeline })}">${label}</a>`;
  const row = (r: RunStatus) => {
    const p = r.progress;
    return html`<tr>
      <td><a href="${ctx.prefix}/runs/${encodeURIComponent(r.runId)}">${r.runId}</a></td>
      <td class="state-cell">${stateBadge(r.state)}${priorityMark(r)}${resultNote(r)}</td>
      <td>${startedBy(ctx, r.trigger)}</td>
      <td class="nowrap">${cutText(r.model)}</td>
      <td class="nowrap">${cutText(r.input)}</td>
      <td class="progress-cell">
        ${p ? html`${progressBar(p.rowsDone, p.rowsTotal)}<span class="muted">${integer(p.rowsDone)} / ${integer(p.rowsTotal)}</span>` : html`<span class="muted">not planned</span>`}
      </td>
      <td class="num">${rateOf(r)}</td>
      <td>
        <div class="nowrap">${shortDateTime(r.enqueuedAt)}</div>
        ${r.finishedAt ? html`<div class="nowrap muted">${shortDateTime(r.finishedAt)}</div>` : ''}
      </td>
    </tr>`;
  };
  const title = pipeline ? html`Runs of pipeline <span class="run-id">${pipeline}</span>` : 'Runs';
  const body = html`<h1>${title}</h1>
    <nav class="filters">
      ${stateFilter('all')}${RUN_STATES.map((s) => stateFilter(s, s))}
      ${pipeline ? html`<a class="pill current" id="pipeline-filter" href="${listHref(ctx, { state })}" title="show every pipeline's runs">pipeline ${pipeline} ×</a>` : ''}
    </nav>
    ${
      runs.length === 0
        ? html`<p class="empty">
            No ${state ?? ''} runs${pipeline ? html` of pipeline ${pipeline}` : ''} ${pageNumber > 1 ? `on page ${pageNumber}` : 'on the queue'}.
          </p>`
        : html`<table class="runs">
            <thead>
              <tr>
                <th>Run</th>
                <th>State</th>
                <th>Started by</th>
                <th>Model</th>
                <th>Input</th>
                <th>Rows</th>
                <th class="num">Rows/s</th>
                <th>Enqueued<br />finished</th>
              </tr>
            </thead>
            <tbody>
              ${runs.map(row)}
            </tbody>
          </table>`
    }
    ${pager(pageNumber, older, (n) => listHref(ctx, { state, pipeline, page: n }))}`;
  return page(ctx, pipeline ? `Runs of ${pipeline}` : 'Runs', body, { refresh: runs.some((r) => !isSettled(r.state)) }).text;
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

/** `/ui/runs/:id`: a run's progress, segments, throughput, prediction profile, drift, comparison, quarantined rows, model, outputs and webhook deliveries. */
export function renderRunPage(ctx: PageContext, view: RunPageView): string {
  const { status, manifest } = view;
  const live = !isSettled(status.state);
  const charts: ChartSpec[] = [];
  const body = html`<div class="title">
      <h1>Run <span class="run-id">${status.runId}</span></h1>
      ${stateBadge(status.state)} ${live ? html`<span class="muted">refreshing every ${REFRESH_SECONDS} s</span>` : ''}
    </div>
    <p class="subtitle"><span>${status.model}</span> · <span class="wrap">${status.input}</span> → <span class="wrap">${status.folder}</span></p>
    ${view.progress ? resultNotice(status) : ''} ${view.problems.map((p) => html`<p class="notice">Could not read ${p}</p>`)} ${progressSection(view)}
    ${triggerSection(ctx, status.trigger)} ${segmentsSection(view)} ${throughputSection(view, charts)} ${profileSection(manifest, charts)}
    ${driftSection(ctx, manifest)} ${comparisonSection(ctx, view, charts)} ${quarantineSection(view)} ${modelSection(view)} ${outputsSection(ctx, view)}
    ${notificationsSection(view.notifications)}`;
  return page(ctx, `Run ${status.runId}`, body, { refresh: live, charts }).text;
}

function progressSection({ status, progress: p, manifest }: RunPageView): Html {
  const stat = (label: string, value: HtmlValue, id: string) =>
    html`<div class="stat" id="stat-${id}">
      <div class="label">${label}</div>
      <div class="value">${value}</div>
    </div>`;
  const finishedAt = status.finishedAt ? Date.parse(status.finishedAt) : undefined;
  const duration = manifest ? manifest.durationMs / 1000 : finishedAt ? (finishedAt - Date.parse(status.enqueuedAt)) / 1000 : undefined;
  const eta = !p || isSettled(status.state) ? '–' : p.etaSeconds === null ? '?' : formatDuration(p.etaSeconds);
  return html`<section class="card">
    <h2>Progress</h2>
    ${
      p
        ? html`<div class="bar">
            ${progressBar(p.rowsDone, p.rowsTotal)}<span>${p.rowsTotal > 0 ? Math.floor((p.rowsDone * 100) / p.rowsTotal) : 0}%</span>
          </div>`
        : notPlanned(status)
    }
    <div class="stats">
      ${stat('Rows', p ? html`${integer(p.rowsDone)} <small>/ ${integer(p.rowsTotal)}</small>` : '–', 'rows')}
      ${stat('Quarantined', p ? integer(p.rowsQuarantined) : '–', 'quarantined')} ${stat('Rows/s', rateOf(status), 'rate')} ${stat('ETA', eta, 'eta')}
      ${stat('Segments', p ? html`${p.segmentsDone} <small>/ ${p.segmentsTotal}</small>` : '–', 'segments')} ${stat('Attempts', status.attempts, 'attempts')}
    </div>
    <dl class="facts">
      <dt>Priority</dt>
      <dd id="priority">${status.priority}</dd>
      <dt>Enqueued</dt>
      <dd>${dateTime(status.enqueuedAt)}</dd>
      <dt>Finished</dt>
      <dd>${dateTime(status.finishedAt)}</dd>
      ${
        duration !== undefined
          ? html`<dt>Duration</dt>
              <dd>${formatDuration(duration)}</dd>`
          : ''
      }
      ${
        manifest?.counts
          ? html`<dt>Requests</dt>
              <dd>${integer(manifest.counts.requests)} (${integer(manifest.counts.retries)} retries)</dd>
              <dt>Scored</dt>
              <dd>${integer(manifest.counts.rowsScored)}</dd>`
          : ''
      }
    </dl>
  </section>`;
}

/** Why a settled run did not succeed, as `status` says it: `<message> [<code>]` (bounded), or the reason BullMQ kept for a job without a result. */
function reasonText(status: RunStatus): string | undefined {
  const error = status.result?.error;
  if (error) return `${excerpt(error.message, MESSAGE_BYTES)} [${error.code}]`;
  return status.failedReason && excerpt(status.failedReason, MESSAGE_BYTES);
}

/**
 * The banner of a settled run that did not simply succeed: its error (failed, expired, cancelled),
 * the judgement it waits for (held), or who accepted it. Nothing for a live run or a plain success.
 */
function resultNotice(status: RunStatus): HtmlValue {
  const { result } = status;
  const why = reasonText(status);
  switch (status.state) {
    case 'held':
      return html`<p class="notice" id="held">Held: its outputs are written and wait for accept or reject. ${why ?? ''}</p>`;
    case 'succeeded':
      return result?.accepted
        ? html`<p class="notice" id="accepted">
            Accepted by ${result.accepted.by} at ${dateTime(result.accepted.at)}${result.accepted.why ? `: ${result.accepted.why}` : ''}.
          </p>`
        : '';
    case 'failed':
    case 'expired':
    case 'cancelled':
      return why ? html`<p class="notice error" id="failure">${why}</p>` : '';
    default:
      return '';
  }
}

/** What the progress section says of a run that has no plan: why, from the run's state. */
function notPlanned(status: RunStatus): Html {
  switch (status.state) {
    case 'queued':
      return html`<p class="muted">Not planned yet: the run waits for a worker.</p>`;
    case 'running':
      return html`<p class="muted">Not planned yet: the input is being read.</p>`;
    case 'cancelling':
    case 'cancelled':
      return html`<p class="muted">The run was cancelled before its input was planned.</p>`;
    case 'failed':
      return html`<p class="notice error" id="failure">
        The run failed before its input was planned${reasonText(status) ? html`: ${reasonText(status)}` : '.'}
      </p>`;
    case 'expired':
      return html`<p class="notice error" id="failure">
        The run reached a cap before its input was planned${reasonText(status) ? html`: ${reasonText(status)}` : '.'}
      </p>`;
    case 'held':
    case 'succeeded':
      return html`<p class="muted">No progress is known: it has expired.</p>`;
  }
}

/** What started the run, in full: the schedule's fire time, the file version an event or a poll found, the command. */
function triggerSection(ctx: PageContext, trigger: RunTrigger | undefined): Html {
  const fact = (label: string, value: HtmlValue, id: string) =>
    html`<dt>${label}</dt>
      <dd id="trigger-${id}">${value}</dd>`;
  const object = (o: ObjectVersion) =>
    html`${fact('Object', html`<code class="wrap">${o.location}</code>`, 'location')} ${fact('ETag', html`<code>${o.etag}</code>`, 'etag')}
    ${o.versionId !== undefined ? fact('Version id', html`<code>${o.versionId}</code>`, 'version') : ''}
    ${o.size !== undefined ? fact('Size', formatBytes(o.size), 'size') : ''}`;
  const facts = (t: RunTrigger): Html => {
    switch (t.kind) {
      case 'cli':
        return fact('Command', html`<code>batch-scorer ${t.command}</code>`, 'command');
      case 'api':
        return fact('Request', html`<code>POST /runs</code>`, 'request');
      case 'schedule':
        return html`${fact('Fire time', dateTime(t.fireTime), 'fire-time')} ${fact('Cron', html`<code>${t.cron}</code>`, 'cron')}
        ${fact('Time zone', t.tz, 'tz')}`;
      case 'event':
        return html`${fact('Event', t.eventName, 'event')} ${t.eventTime !== undefined ? fact('Event time', dateTime(t.eventTime), 'event-time') : ''}
        ${object(t.object)}`;
      case 'poll':
        return html`${fact('Found at', dateTime(t.foundAt), 'found-at')} ${object(t.object)}`;
    }
  };
  const what: Record<RunTrigger['kind'], string> = {
    cli: 'the command line',
    api: 'the run API',
    schedule: 'a schedule',
    event: 'an S3 event notification',
    poll: 'watch, polling the storage',
  };
  return html`<section class="card" id="trigger">
    <h2>Started by</h2>
    ${
      trigger
        ? html`<dl class="facts">
            ${fact('Kind', html`${trigger.kind} <span class="muted">(${what[trigger.kind]})</span>`, 'kind')}
            ${'pipeline' in trigger ? fact('Pipeline', html`<a href="${listHref(ctx, { pipeline: trigger.pipeline })}">${trigger.pipeline}</a>`, 'pipeline') : ''}
            ${facts(trigger)}
          </dl>`
        : html`<p class="muted">Not recorded: the run was enqueued by an earlier release, or by a program that named nothing.</p>`
    }
  </section>`;
}

const CELL_LABELS: Record<SegmentCell['state'], string> = {
  waiting: 'waiting',
  retrying: 'retrying',
  active: 'active',
  done: 'done',
  failed: 'failed',
  skipped: 'not scored',
};

/** What a section of the page that only Redis keeps says of a run the queue has no record of. */
const FOLDER_ONLY = 'Not known: the queue has no record of this run (scored by score, or gone from Redis); its run folder tells the rest.';

function segmentsSection(view: RunPageView): Html {
  const cells = view.segments;
  if (view.folderOnly)
    return html`<section class="card" id="segments-unknown">
      <h2>Segments</h2>
      <p class="muted">${FOLDER_ONLY}</p>
    </section>`;
  if (cells.length === 0)
    return html`<section class="card">
      <h2>Segments</h2>
      <p class="muted">
        ${view.status.state === 'queued' || view.status.state === 'running' ? 'None yet: the run is not planned.' : 'None known: the run was not planned, or its progress has expired.'}
      </p>
    </section>`;
  const counts = new Map<SegmentCell['state'], number>();
  for (const c of cells) counts.set(c.state, (counts.get(c.state) ?? 0) + 1);
  const cell = (c: SegmentCell) => {
    const tip = [
      `segment ${c.index}: ${CELL_LABELS[c.state]}`,
      c.rows !== undefined ? `${integer(c.rows)} rows` : '',
      c.quarantined ? `${integer(c.quarantined)} quarantined` : '',
      c.worker ? `worker ${c.worker}` : '',
      c.attempts ? `${c.attempts} failed attempts` : '',
      c.reason ?? '',
    ]
      .filter(Boolean)
      .join(' · ');
    const detail =
      c.state === 'active' || c.state === 'retrying'
        ? (c.worker ?? '')
        : c.state === 'done' && c.rows !== undefined
          ? `${integer(c.rows)} rows`
          : CELL_LABELS[c.state];
    return html`<li class="cell cell-${c.state}" data-state="${c.state}" title="${tip}">
      <span class="index">${c.index}</span><span class="detail">${detail}</span>
    </li>`;
  };
  return html`<section class="card">
    <h2>Segments</h2>
    <ul class="legend">
      ${[...counts].map(([state, n]) => html`<li><span class="swatch cell-${state}"></span>${CELL_LABELS[state]} <strong>${n}</strong></li>`)}
    </ul>
    <ol class="grid${cells.length > 120 ? ' compact' : ''}" id="segments">
      ${cells.map(cell)}
    </ol>
  </section>`;
}

function throughputSection(view: RunPageView, charts: ChartSpec[]): Html {
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

/**
 * How far the run's values moved from its baseline run's (the manifest's `drift`), the largest PSI
 * first, the columns past a threshold marked; and who accepted the run, where it failed on its
 * drift and was accepted. Nothing for a run without a baseline.
 */
function driftSection(ctx: PageContext, manifest: PageManifest | undefined): Html {
  const drift = manifest?.drift;
  if (!drift) return html``;
  const { baseline, thresholds } = drift;
  const threshold = (psi: number | null) => (psi === null ? html`<span class="muted">none</span>` : psi.toFixed(3));
  const accepted = manifest.accepted;
  const columns = [...drift.columns].sort((a, b) => b.psi - a.psi);
  return html`<section class="card" id="drift">
    <h2>Drift ${levelBadge(drift.level)}</h2>
    <dl class="facts">
      <dt>Baseline run</dt>
      <dd>
        <a href="${ctx.prefix}/runs/${encodeURIComponent(baseline.runId)}">${baseline.runId}</a>
        <span class="muted"
          >(${baseline.chosen === 'named' ? 'named by the run' : "the pipeline's previous run"}, finished ${dateTime(baseline.finishedAt)})</span
        >
      </dd>
      <dt>PSI warn / fail</dt>
      <dd>${threshold(thresholds.warn)} / ${threshold(thresholds.fail)}</dd>
      ${
        accepted
          ? html`<dt>Accepted</dt>
              <dd id="drift-accepted">by ${accepted.by}, ${dateTime(accepted.at)} <span class="muted">(it was held on ${accepted.error.code})</span></dd>`
          : ''
      }
    </dl>
    ${
      columns.length > 0
        ? html`<table class="drift">
            <thead>
              <tr>
                <th>Column</th>
                <th>Of</th>
                <th class="num">PSI</th>
                <th class="num">JS distance</th>
                <th>Level</th>
                <th class="num">Rows (baseline / now)</th>
              </tr>
            </thead>
            <tbody>
              ${columns.map((c) => {
                const rows = (run: 'baseline' | 'current') => integer(c.bins.reduce((n, b) => n + b[run], 0));
                return html`<tr class="${drift.moved.includes(c.column) ? 'moved' : ''}">
                  <td><code>${c.column}</code></td>
                  <td>${c.of}</td>
                  <td class="num">${c.psi.toFixed(3)}</td>
                  <td class="num">${c.jsDistance.toFixed(3)}</td>
                  <td>${levelBadge(c.level)}</td>
                  <td class="num">${rows('baseline')} / ${rows('current')}</td>
                </tr>`;
              })}
            </tbody>
          </table>`
        : html`<p class="muted">No column could be compared.</p>`
    }
    ${
      drift.skipped.length > 0
        ? html`<h3>Not compared</h3>
            <ul class="skipped">
              ${drift.skipped.map((k) => html`<li><code>${k.column}</code>: ${k.why}</li>`)}
            </ul>`
        : ''
    }
  </section>`;
}

/** A drift level's coloured badge. */
function levelBadge(level: string): Html {
  return html`<span class="badge badge-drift-${level}">${level}</span>`;
}

function quantileLabel(p: number): string {
  return `p${shortNumber(p * 100)}`;
}

function histogramChart(canvas: string, summary: NumericSummary, label: string, color: ChartColor): ChartSpec {
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

function profileSection(manifest: PageManifest | undefined, charts: ChartSpec[]): Html {
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

/** Count, min, mean, max and quantiles of some summaries side by side, a column each; nothing without any. */
function statsTable(columns: { name: string; s: NumericSummary }[]): HtmlValue {
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

/**
 * Shadow scoring's comparison of the run's model with another (the manifest's `comparison`): per
 * target the agreement, the differences' histogram and quantiles and the interval ends' shifts,
 * then the rows that differ most side by side, read from comparison.json; nothing without one.
 */
function comparisonSection(ctx: PageContext, { status, manifest, comparison: file }: RunPageView, charts: ChartSpec[]): Html {
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

/** An input row as one short line of JSON. */
function inputText(input: unknown): string {
  const text = typeof input === 'string' ? input : (JSON.stringify(input) ?? '');
  return text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

function quarantineSection({ quarantined, progress }: RunPageView): Html {
  if (!quarantined) {
    const none = progress && progress.rowsQuarantined === 0 ? 'No row was quarantined.' : 'No quarantined rows to show yet.';
    return html`<section class="card">
      <h2>Quarantined rows</h2>
      <p class="muted">${none}</p>
    </section>`;
  }
  const row = (r: (typeof quarantined.rows)[number]) =>
    'unreadable' in r
      ? html`<tr>
          <td colspan="4" class="muted">unreadable line: <code>${r.unreadable}</code></td>
        </tr>`
      : html`<tr>
          <td class="num">${r.row}</td>
          <td>${r.status ?? ''} ${r.title ?? ''}</td>
          <td class="wrap">${r.detail}</td>
          <td><code class="wrap">${inputText(r.input)}</code></td>
        </tr>`;
  const total = progress?.rowsQuarantined;
  return html`<section class="card">
    <h2>Quarantined rows</h2>
    <p class="muted">The first ${quarantined.rows.length}${total !== undefined ? html` of ${integer(total)}` : ''}, from ${quarantined.from}.</p>
    <table class="quarantine">
      <thead>
        <tr>
          <th class="num">Row</th>
          <th>Status</th>
          <th>Reason</th>
          <th>Input</th>
        </tr>
      </thead>
      <tbody>
        ${quarantined.rows.map(row)}
      </tbody>
    </table>
  </section>`;
}

function modelSection({ status, manifest, prepared, describe }: RunPageView): Html {
  // Resolved at the run's start: in run.json while the run goes on, in the manifest once it ended (not for a run that failed before).
  const resolved = manifest ? ('project' in manifest.model ? manifest.model : undefined) : prepared?.model;
  const service = manifest?.service ?? prepared?.service;
  return html`<section class="card">
    <h2>Model</h2>
    <dl class="facts">
      <dt>Requested</dt>
      <dd>${manifest?.model.requested ?? prepared?.model.requested ?? status.model}</dd>
      ${
        resolved
          ? html`<dt>Model</dt>
              <dd>${resolved.project}/${resolved.name}</dd>
              <dt>Pinned version</dt>
              <dd>${resolved.resolvedVersion ?? html`<span class="muted">none (the server reports no version)</span>`}</dd>
              <dt>Status</dt>
              <dd>${resolved.status ?? '–'}</dd>
              <dt>Row id member</dt>
              <dd>${resolved.rowIdMember ?? html`<span class="muted">none (rows aligned by position)</span>`}</dd>`
          : ''
      }
      ${
        service
          ? html`<dt>Service</dt>
              <dd>${service}</dd>`
          : ''
      }
    </dl>
    ${
      describe
        ? html`<details>
            <summary>Describe snapshot, taken ${dateTime(describe.takenAt)} from ${describe.service}</summary>
            <pre>${JSON.stringify(describe.answers, null, 2)}</pre>
          </details>`
        : html`<p class="muted">No describe snapshot yet.</p>`
    }
  </section>`;
}

function outputsSection(ctx: PageContext, { status, manifest }: RunPageView): Html {
  const files = manifest?.outputs ?? [];
  const warnings = manifest?.warnings ?? [];
  const href = (file: string) => `${ctx.prefix}/runs/${encodeURIComponent(status.runId)}/files/${encodeURIComponent(file)}`;
  return html`<section class="card">
    <h2>Outputs</h2>
    <p class="muted">Run folder <code>${status.folder}</code></p>
    ${
      files.length > 0
        ? html`<table class="outputs">
            <thead>
              <tr>
                <th>File</th>
                <th class="num">Rows</th>
                <th class="num">Size</th>
                <th>sha256</th>
                <th>Location</th>
              </tr>
            </thead>
            <tbody>
              ${files.map(
                (f) =>
                  html`<tr>
                    <td><a href="${href(f.file)}" download>${f.file}</a></td>
                    <td class="num">${integer(f.rows)}</td>
                    <td class="num">${formatBytes(f.bytes)}</td>
                    <td><code title="${f.sha256}">${f.sha256.slice(0, 12)}…</code></td>
                    <td class="wrap"><code>${f.location}</code></td>
                  </tr>`,
              )}
            </tbody>
          </table>`
        : html`<p class="muted">${manifest ? 'This run wrote no outputs.' : 'The outputs are listed once the run is assembled.'}</p>`
    }
    ${
      warnings.length > 0
        ? html`<h3>Warnings</h3>
            <ul class="warnings">
              ${warnings.map((w) => html`<li>${w}</li>`)}
            </ul>`
        : ''
    }
  </section>`;
}
