import type { ObjectVersion, RunTrigger } from '../scoring/index.js';
import { html, type Html, type HtmlValue } from './html.js';
import { dateTime, formatBytes } from './page-format.js';
import type { PageContext } from './page-layout.js';
import { listHref } from './run-list-html.js';

/** What started the run, in full: the schedule's fire time, the file version an event or a poll found, the command. */
export function triggerSection(ctx: PageContext, trigger: RunTrigger | undefined): Html {
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
