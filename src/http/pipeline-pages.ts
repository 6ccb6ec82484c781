import type { FastifyPluginCallback } from 'fastify';
import { z } from 'zod';
import { type Pipeline, pipelineNameSchema } from '../triggers/index.js';
import { sendHtml } from './html-reply.js';
import { pageNumberSchema } from './page-query.js';
import { gatherPipelineList, gatherPipelinePage, PIPELINE_MAX_PAGE, type PipelinePageSources } from './pipeline-page-data.js';
import { renderPipelineList, renderPipelinePage } from './pipeline-page-html.js';
import { renderMessage, type PageContext } from './page-layout.js';

/** What the pipeline pages show: the pipelines of `jobs/*.yaml`, their runs and run folders. */
export interface PipelinePagesDeps extends PipelinePageSources {
  pipelines: readonly Pipeline[];
}

const pageQuery = z.object({ page: pageNumberSchema(PIPELINE_MAX_PAGE).optional() });

/**
 * The pipeline pages, registered by runPages (whose prefix, assets and error page they share):
 * `GET /pipelines` (every pipeline, its next firing and latest run) and `GET /pipelines/:name`
 * (its recent runs, a page at a time, and charts of their predictions, drift and rate).
 */
export function pipelinePages(deps: PipelinePagesDeps, ctx: PageContext): FastifyPluginCallback {
  return (app, _options, done) => {
    app.get('/pipelines', async (_request, reply) => sendHtml(reply, 200, renderPipelineList(ctx, await gatherPipelineList(deps, deps.pipelines, new Date()))));

    app.get<{ Params: { name: string } }>('/pipelines/:name', async (request, reply) => {
      const { name } = request.params;
      const pipeline = pipelineNameSchema.safeParse(name).success ? deps.pipelines.find((p) => p.name === name) : undefined;
      if (!pipeline) return sendHtml(reply, 404, renderMessage(ctx, 'No such pipeline', `No pipeline ${name} is declared in jobs/*.yaml.`));
      const query = pageQuery.safeParse(request.query);
      if (!query.success) return sendHtml(reply, 400, renderMessage(ctx, 'Bad page', `page must be a whole number from 1 to ${PIPELINE_MAX_PAGE}.`));
      const view = await gatherPipelinePage(deps, pipeline, query.data.page ?? 1, new Date());
      return sendHtml(reply, 200, renderPipelinePage(ctx, view));
    });
    done();
  };
}
