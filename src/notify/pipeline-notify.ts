import { z } from 'zod';
import { NOTIFY_EVENTS, notifyEventSchema } from './notify-events.js';
import { webhookUrlProblem } from '../config/index.js';

/** Targets one pipeline declares at most: each end of each run is one delivery per target. */
export const MAX_TARGETS = 10;

/** A webhook target URL, refused without being quoted (see webhookUrlProblem). */
export const webhookUrlSchema = z.string().superRefine((text, ctx) => {
  const problem = webhookUrlProblem(text);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/**
 * A pipeline's `notify` in `jobs/*.yaml`: webhooks told of its runs' ends, for the events of `on`
 * only (all five by default). NOTIFY_URLS hears every run's end besides.
 */
export const pipelineNotifySchema = z
  .object({
    urls: z.array(webhookUrlSchema).min(1).max(MAX_TARGETS),
    on: z
      .array(notifyEventSchema)
      .min(1)
      .default([...NOTIFY_EVENTS]),
  })
  .strict();
export type PipelineNotify = z.output<typeof pipelineNotifySchema>;
