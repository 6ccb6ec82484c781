import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { fileDropsOfEvent, s3EventSchema, type Pipeline } from '../triggers/index.js';
import type { RunQueue } from '../queue/index.js';
import { answer, failure, GUARDED, JSON_BODY, QUEUED, TAGS } from './api-responses.js';

/** What the event intake needs: the queue that claims file versions and enqueues their runs, and the pipelines. */
export interface EventRoutesDeps {
  /** Claims and enqueues; answers 503 while Redis is away (see ReconnectingRunQueue). */
  runs: Pick<RunQueue, 'enqueueFileDrop'>;
  /** The pipelines of `jobs/*.yaml`, read when serve started: events are matched against their triggers. */
  pipelines: readonly Pipeline[];
}

/** `POST /events/s3`'s answer: the runs of the event's files (`created: false` for one started before), and how many records started none. */
export const eventRunsSchema = z.object({
  runs: z.array(z.object({ runId: z.string(), pipeline: z.string(), location: z.string(), created: z.boolean() })),
  ignored: z.number().int(),
});

const receiveS3EventsSchema = {
  operationId: 'receiveS3Events',
  summary:
    "S3 event notifications (AWS, MinIO's webhook, the s3:TestEvent): one run per new file version under a file-drop pipeline's prefix, however often it is notified",
  tags: [TAGS.events],
  body: s3EventSchema,
  response: {
    200: answer('the runs of the notified files (created: false for a file version seen before), and how many records started none', eventRunsSchema),
    400: failure('E_USAGE: a bad field, each named in issues'),
    403: failure("E_NOT_ALLOWED: a notified file's run would reach outside the deployment policy"),
    ...JSON_BODY,
    ...GUARDED,
    ...QUEUED,
  },
};

/**
 * `POST /events/s3`: S3 event notifications (AWS or MinIO webhook) start one run per new file
 * version under a pipeline's prefix. Answers in milliseconds: matching is in memory, and the only
 * I/O is the claim and enqueue in Redis (503 while it is away, which senders retry).
 */
export const eventRoutes: FastifyPluginCallbackZod<EventRoutesDeps> = (app, { runs, pipelines }, done) => {
  app.post('/events/s3', { schema: receiveS3EventsSchema }, async (request) => {
    const { drops, ignored } = fileDropsOfEvent(request.body, pipelines, new Date());
    for (const record of ignored) request.log.info(record, 'S3 event record ignored');
    const body: z.output<typeof eventRunsSchema> = { runs: [], ignored: ignored.length };
    for (const drop of drops) {
      const { runId, created } = await runs.enqueueFileDrop(drop);
      const { pipeline, object } = drop.trigger;
      request.log.info(
        { runId, created, pipeline, location: object.location, etag: object.etag },
        created ? 'file drop: run enqueued' : 'file drop: run started before',
      );
      body.runs.push({ runId, pipeline, location: object.location, created });
    }
    return body;
  });
  done();
};
