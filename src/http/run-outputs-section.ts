import { html, type Html } from './html.js';
import { formatBytes, integer } from './page-format.js';
import type { PageContext } from './page-layout.js';
import type { RunPageView } from './run-page-data.js';

/** The run page's output files, each linked for download, with its size; and the table a run wrote its rows into (--out-table). */
export function outputsSection(ctx: PageContext, { status, manifest }: RunPageView): Html {
  const files = manifest?.outputs ?? [];
  const table = manifest?.table;
  const warnings = manifest?.warnings ?? [];
  const href = (file: string) => `${ctx.prefix}/runs/${encodeURIComponent(status.runId)}/files/${encodeURIComponent(file)}`;
  return html`<section class="card">
    <h2>Outputs</h2>
    <p class="muted">Run folder <code>${status.folder}</code></p>
    ${
      table
        ? html`<p>
            ${integer(table.rows)} rows published into the table <code>${table.table}</code> of <code>${table.database}</code>, recorded in
            <code>${table.runsTable}</code>
          </p>`
        : ''
    }
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
