import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from '../queue/index.js';
import type { FastifyPluginAsync } from 'fastify';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { dashboardActionGuard } from './dashboard-actions.js';

/** Where the queue dashboard lives; `/ui/runs` and `/ui/assets` belong to the run pages. */
export const QUEUES_PATH = '/ui/queues';

/** Where bull-board's header menu leads back to: the run pages. */
const RUNS_PATH = '/ui/runs';

/**
 * A `<link>` to another origin (`https://...` or `//...`): bull-board's page asks Google Fonts
 * for its typeface. Its stylesheet falls back to the system font stack, so the link is dropped
 * rather than let the page send every visitor's address to another host.
 */
const OUTSIDE_LINK = /<link\b[^>]*\bhref\s*=\s*["']?(?:[a-z][a-z0-9+.-]*:)?\/\/[^>]*>\s*/gi;

/**
 * bull-board over the given queues, as a fastify plugin to register at QUEUES_PATH behind
 * authentication (it has none of its own). Read-only unless `actions`: then users may retry
 * failed jobs, remove, pause and clean jobs from the page, and nothing else (see
 * dashboardActionGuard: bull-board would also add jobs, edit them, promote them...), which is
 * refused server side. Its header menu links to the run pages; its page loads nothing from
 * another host.
 */
export function queueDashboard(queues: readonly Queue[], options: { actions: boolean }): FastifyPluginAsync {
  const server = new FastifyAdapter();
  server.setBasePath(QUEUES_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode: !options.actions, allowRetries: options.actions })),
    serverAdapter: server,
    // No link to bull-board's documentation site: the dashboard is this service's, and stays on its host.
    options: { uiConfig: { boardTitle: 'batch-scorer', miscLinks: [{ text: 'Run pages', url: RUNS_PATH }], hideDocsLink: true } },
  });
  return async (board) => {
    board.addHook('onRequest', dashboardActionGuard(QUEUES_PATH, queues));
    board.addHook('onSend', async (_request, reply, payload) =>
      typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('text/html') ? payload.replace(OUTSIDE_LINK, '') : payload,
    );
    await board.register(server.registerPlugin());
  };
}

/**
 * A `<style>` element bull-board's scripts render (React's `jsx("style", { children: ... })`,
 * the Redis logo of its header), as a template or string literal without escapes or
 * substitutions, whose text is then exactly what the browser hashes.
 */
const RENDERED_STYLE = /\("style",\{children:(?:`([^`$\\]*)`|"([^"\\]*)")/g;

/**
 * The inline styles of bull-board's page, read once at start from its package, for the
 * Content-Security-Policy to allow by hash: the template's loading placeholder (a few `style`
 * attributes and one `<style>` element, none of them templated) and the `<style>` elements its
 * scripts render. The browser test of the dashboard fails on any that is missed.
 */
export function dashboardInlineStyles(): string[] {
  const dist = join(dirname(createRequire(import.meta.url).resolve('@bull-board/ui/package.json')), 'dist');
  const template = readFileSync(join(dist, 'index.ejs'), 'utf8');
  const attributes = [...template.matchAll(/\sstyle="([^"]*)"/g)].map((m) => m[1]);
  const elements = [...template.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
  const scripts = join(dist, 'static', 'js');
  const rendered = readdirSync(scripts, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.js'))
    .flatMap((name) => [...readFileSync(join(scripts, name), 'utf8').matchAll(RENDERED_STYLE)].map((m) => m[1] ?? m[2]));
  return [...attributes, ...elements, ...rendered];
}
