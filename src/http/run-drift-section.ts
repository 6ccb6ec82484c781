import { html, type Html } from './html.js';
import { dateTime, integer } from './page-format.js';
import type { PageContext } from './page-layout.js';
import type { PageManifest } from './run-page-data.js';

/**
 * How far the run's values moved from its baseline run's (the manifest's `drift`), the largest PSI
 * first, the columns past a threshold marked; and who accepted the run, where it failed on its
 * drift and was accepted. Nothing for a run without a baseline.
 */
export function driftSection(ctx: PageContext, manifest: PageManifest | undefined): Html {
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
