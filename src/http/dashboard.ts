import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyPluginCallback } from 'fastify';

/** Where the queue dashboard lives; `/ui/runs` and `/ui/assets` belong to the run pages. */
export const QUEUES_PATH = '/ui/queues';

/**
 * bull-board over the given queues, as a fastify plugin to register at QUEUES_PATH behind
 * authentication (it has none of its own). Read-only unless `actions`: then users may retry,
 * remove, pause and clean jobs from the page, which bull-board refuses otherwise, server side.
 */
export function queueDashboard(queues: readonly Queue[], options: { actions: boolean }): FastifyPluginCallback {
  const server = new FastifyAdapter();
  server.setBasePath(QUEUES_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode: !options.actions, allowRetries: options.actions })),
    serverAdapter: server,
    options: { uiConfig: { boardTitle: 'batch-scorer' } },
  });
  return server.registerPlugin();
}
