import type { RunStatus } from '../queue/index.js';
import { isSettled } from '../scoring/index.js';
import { MESSAGE_BYTES, excerpt } from '../text-excerpt.js';
import { html, type Html, type HtmlValue } from './html.js';
import { dateTime, formatDuration, integer, progressBar, rateOf } from './page-format.js';
import type { RunPageView } from './run-page-data.js';

/** The run page's progress: the bar (or why there is none), the counts, rate and ETA, and when it was enqueued and finished. */
export function progressSection({ status, progress: p, manifest }: RunPageView): Html {
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
export function resultNotice(status: RunStatus): HtmlValue {
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
