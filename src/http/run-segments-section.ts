import { html, type Html } from './html.js';
import { integer } from './page-format.js';
import type { RunPageView, SegmentCell } from './run-page-data.js';

const CELL_LABELS: Record<SegmentCell['state'], string> = {
  waiting: 'waiting',
  retrying: 'retrying',
  active: 'active',
  done: 'done',
  failed: 'failed',
  skipped: 'not scored',
};

/** What a section of the page that only Redis keeps says of a run the queue has no record of. */
export const FOLDER_ONLY = 'Not known: the queue has no record of this run (scored by score, or gone from Redis); its run folder tells the rest.';

/** The run page's segments: a cell per segment, labelled by its state. */
export function segmentsSection(view: RunPageView): Html {
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
