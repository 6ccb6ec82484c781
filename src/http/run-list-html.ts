import type { RunStatus } from '../queue/index.js';
import { RUN_STATES, isSettled, type RunState, capNote, resultNotes, describeTrigger, type RunTrigger } from '../scoring/index.js';
import { VALUE_BYTES, excerpt } from '../text-excerpt.js';
import { html, type Html, type HtmlValue } from './html.js';
import { integer, progressBar, rateOf, shortDateTime, stateBadge } from './page-format.js';
import { page, type PageContext } from './page-layout.js';
import type { RunListFilter, RunListPage } from './run-page-data.js';

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
