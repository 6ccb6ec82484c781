import type { DeliveryRecord } from '../notify/index.js';
import { html, type Html } from './html.js';

/**
 * The run page's webhook deliveries of the run's end (`notifications/*.json` of its folder): to
 * which origin, for which events, how many attempts, and how the last went. Nothing when none.
 */
export function notificationsSection(records: readonly DeliveryRecord[] | undefined): Html | '' {
  if (!records || records.length === 0) return '';
  const row = (r: DeliveryRecord) =>
    html`<tr>
      <td><code>${r.deliveryId}</code></td>
      <td>${r.events.join(', ')}</td>
      <td class="wrap">${r.target}</td>
      <td class="num">${r.attempts}</td>
      <td>${r.lastStatus ?? r.lastError ?? ''}</td>
      <td>${r.outcome} <span class="muted">${r.at}</span></td>
    </tr>`;
  return html`<section class="card" id="notifications">
    <h2>Notifications</h2>
    <table>
      <thead>
        <tr>
          <th>Delivery</th>
          <th>Events</th>
          <th>Target</th>
          <th class="num">Attempts</th>
          <th>Last answer</th>
          <th>Outcome</th>
        </tr>
      </thead>
      <tbody>
        ${records.map(row)}
      </tbody>
    </table>
  </section>`;
}
