import { RUN_STATES } from '../scoring/index.js';
import { stateFilterSchema } from './run-schemas.js';
import type { FastifyPluginAsync } from 'fastify';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { errorCode, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { PACKAGE_ROOT } from '../version.js';

import { type Pipeline, pipelineNameSchema } from '../triggers/index.js';
import { sendHtml } from './html-reply.js';
import { pageNumberSchema } from './page-query.js';
import type { PipelinePageSources } from './pipeline-page-data.js';
import { pipelinePages } from './pipeline-pages.js';
import { gatherRunList, gatherRunPage, LIST_MAX_PAGE, outputFile, type RunPageSources } from './run-page-data.js';
import { renderMessage, type PageContext } from './page-layout.js';
import { renderRunList } from './run-list-html.js';
import { renderRunPage } from './run-view-html.js';

/**
 * What the run pages read from (the run queue, the segment jobs, the progress hashes on the
 * server's own Redis connection, the run folders), and where they log.
 */
export interface RunPagesDeps extends RunPageSources {
  log: Logger;
  /** Where the header's "Queues" link goes: by default the root of the plugin's prefix (bull-board at `/ui/`). */
  queuesPath?: string;
  /** The pipelines of `jobs/*.yaml` the pipeline pages show (none by default). */
  pipelines?: readonly Pipeline[];
  /** The schedulers in Redis, which the pipeline pages tell scheduled pipelines' next firings from (see PipelinePageSources). */
  schedules: PipelinePageSources['schedules'];
}

/** Assets are named by content (`?v=`), so browsers may keep them as long as they like. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

const listQuery = z.object({
  state: stateFilterSchema.optional(),
  pipeline: pipelineNameSchema.optional(),
  page: pageNumberSchema(LIST_MAX_PAGE).optional(),
});

/** What a bad filter or page is told, per query parameter. */
function listQueryProblem(issue: z.core.$ZodIssue): string {
  if (issue.path[0] === 'state') return `state must be one of ${RUN_STATES.join(', ')}.`;
  if (issue.path[0] === 'page') return `page must be a whole number from 1 to ${LIST_MAX_PAGE}.`;
  return `pipeline: ${issue.message}.`;
}

/**
 * Our own run pages, as a fastify plugin meant for `app.register(runPages(deps), { prefix: '/ui' })`
 * inside the server's authentication: `GET /runs` (recent runs, `?state=` and `?pipeline=` filter, `?page=` from 1),
 * `GET /runs/:id` (one run), `GET /runs/:id/files/:name` (an output file the run's manifest lists, or its comparison.json),
 * the pipeline pages (`GET /pipelines`, `GET /pipelines/:name`: see pipelinePages), and `GET /assets/{chart.js,run-page.js,run-pages.css,favicon.svg}`. The pages have no inline
 * script or style: the server's security headers (security-headers.ts) allow none.
 */
export function runPages(deps: RunPagesDeps): FastifyPluginAsync {
  return async (app) => {
    const assets = await loadAssets();
    const ctx: PageContext = {
      prefix: app.prefix,
      queues: deps.queuesPath ?? `${app.prefix}/`,
      assets: {
        css: `${app.prefix}/assets/run-pages.css?v=${assets.css.version}`,
        icon: `${app.prefix}/assets/favicon.svg?v=${assets.icon.version}`,
        chart: `${app.prefix}/assets/chart.js?v=${assets.chart.version}`,
        script: `${app.prefix}/assets/run-page.js?v=${assets.script.version}`,
      },
    };

    app.setErrorHandler((err, request, reply) => {
      deps.log.error({ err, code: errorCode(err), url: request.url }, 'run page failed');
      // A run folder the deployment policy keeps out of reach (job data any producer may write) is refused as such.
      if (errorCode(err) === 'E_NOT_ALLOWED') return sendHtml(reply, 403, renderMessage(ctx, 'Not allowed', `${errorCode(err)}: ${errorMessage(err)}`));
      return sendHtml(reply, 503, renderMessage(ctx, 'Run pages unavailable', `${errorCode(err)}: ${errorMessage(err)}`));
    });

    for (const asset of Object.values(assets)) {
      app.get(`/assets/${asset.name}`, (_request, reply) => reply.header('cache-control', IMMUTABLE).type(asset.type).send(asset.body));
    }

    await app.register(pipelinePages({ runs: deps.runs, storage: deps.storage, schedules: deps.schedules, pipelines: deps.pipelines ?? [] }, ctx));

    app.get('/runs', async (request, reply) => {
      const query = listQuery.safeParse(request.query);
      if (!query.success) {
        return sendHtml(reply, 400, renderMessage(ctx, 'Bad filter', query.error.issues.map(listQueryProblem).join(' ')));
      }
      const list = await gatherRunList(deps, query.data);
      return sendHtml(reply, 200, renderRunList(ctx, list, query.data));
    });

    app.get<{ Params: { id: string } }>('/runs/:id', async (request, reply) => {
      const view = await gatherRunPage(deps, request.params.id);
      if (!view)
        return sendHtml(
          reply,
          404,
          renderMessage(
            ctx,
            'No such run',
            `No run ${request.params.id} is on the queue nor in a run folder under OUTPUT_ROOTS (never started there, or removed since).`,
          ),
        );
      return sendHtml(reply, 200, renderRunPage(ctx, view));
    });

    app.get<{ Params: { id: string; name: string } }>('/runs/:id/files/:name', async (request, reply) => {
      const { id, name } = request.params;
      const file = await outputFile(deps, id, name);
      if (!file) return sendHtml(reply, 404, renderMessage(ctx, 'No such file', `Run ${id} lists no output file ${name}.`));
      const body = await deps.storage.read(file.location);
      return reply
        .type(contentType(file.file))
        .header('cache-control', 'no-store')
        .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(file.file)}`)
        .send(body);
    });
  };
}

function contentType(file: string): string {
  if (file.endsWith('.csv')) return 'text/csv; charset=utf-8';
  if (file.endsWith('.jsonl')) return 'application/x-ndjson; charset=utf-8';
  if (file.endsWith('.json')) return 'application/json; charset=utf-8';
  return 'application/octet-stream';
}

interface Asset {
  name: string;
  type: string;
  body: Buffer;
  /** A digest of the content, for the cache-busting query. */
  version: string;
}

/** The assets, read once: Chart.js from its package, the page script and stylesheet from `assets/` at the package root (beside `dist/` and `src/`). */
async function loadAssets(): Promise<Record<'css' | 'chart' | 'script' | 'icon', Asset>> {
  const chartDist = dirname(createRequire(import.meta.url).resolve('chart.js'));
  const own = fileURLToPath(new URL('assets', PACKAGE_ROOT));
  const asset = async (name: string, type: string, path: string): Promise<Asset> => {
    const body = await readFile(path);
    return { name, type, body, version: createHash('sha256').update(body).digest('hex').slice(0, 12) };
  };
  const js = 'text/javascript; charset=utf-8';
  const [css, chart, script, icon] = await Promise.all([
    asset('run-pages.css', 'text/css; charset=utf-8', join(own, 'run-pages.css')),
    asset('chart.js', js, join(chartDist, 'chart.umd.min.js')),
    asset('run-page.js', js, join(own, 'run-page.js')),
    asset('favicon.svg', 'image/svg+xml', join(own, 'favicon.svg')),
  ]);
  return { css, chart, script, icon };
}
