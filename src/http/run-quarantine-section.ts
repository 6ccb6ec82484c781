import { html, type Html } from './html.js';
import { integer } from './page-format.js';
import type { RunPageView } from './run-page-data.js';

/** An input row as one short line of JSON. */
function inputText(input: unknown): string {
  const text = typeof input === 'string' ? input : (JSON.stringify(input) ?? '');
  return text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

/** The run page's quarantined rows: each with its input and the error it failed on. */
export function quarantineSection({ quarantined, progress }: RunPageView): Html {
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
