import { html, type Html } from './html.js';
import { dateTime } from './page-format.js';
import type { RunPageView } from './run-page-data.js';

/** The run page's model: the one requested, the one it resolved to and the service, and the service's describe snapshot. */
export function modelSection({ status, manifest, prepared, describe }: RunPageView): Html {
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
