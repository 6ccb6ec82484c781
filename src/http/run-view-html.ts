import { isSettled } from '../scoring/index.js';
import { html } from './html.js';
import { notificationsSection } from './notifications-section.js';
import { stateBadge } from './page-format.js';
import { REFRESH_SECONDS, page, type ChartSpec, type PageContext } from './page-layout.js';
import { comparisonSection } from './run-comparison-section.js';
import { driftSection } from './run-drift-section.js';
import { modelSection } from './run-model-section.js';
import { outputsSection } from './run-outputs-section.js';
import type { RunPageView } from './run-page-data.js';
import { profileSection } from './run-profile-section.js';
import { progressSection, resultNotice } from './run-progress-section.js';
import { quarantineSection } from './run-quarantine-section.js';
import { segmentsSection } from './run-segments-section.js';
import { throughputSection } from './run-throughput-section.js';
import { triggerSection } from './run-trigger-section.js';

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
