import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Manifest } from '../pipeline/manifest.js';
import { storedLocationSchema } from '../storage/location.js';
import type { NotifyConfig } from './notify-config.js';
import { targetsOf } from './notify-config.js';
import { webhookBody } from './webhook-body.js';

/**
 * One run end told to one target: the same id, body and target on every attempt. Read through
 * this schema where it is attempted, from the notifications queue's job data or as deliveriesOf
 * made it, so its run folder is parsed there once.
 */
export const webhookDeliverySchema = z.object({
  /** `<runId>.<state>.<12 hex>` (see deliveryId). */
  id: z.string(),
  url: z.string(),
  /** The JSON body as sent; signatures are made over it. */
  body: z.string(),
  /** The run folder, where the delivery's outcome is recorded (null: the run has none): text as the manifest says it, a location once read. */
  folder: storedLocationSchema.nullable(),
  /** The end's events, for the record. */
  events: z.array(z.string()),
});
/** A delivery as it is made and enqueued (the notifications queue's job data): its folder as text. */
export type StoredWebhookDelivery = z.input<typeof webhookDeliverySchema>;
/** A delivery as it is attempted: its folder parsed. */
export type WebhookDelivery = z.output<typeof webhookDeliverySchema>;

/**
 * A delivery's id, derived from what identifies the run end (run id, start of the attempt that
 * ended, end state) and the target: a run end told twice (a run job taken again after its worker
 * stalled) gives the same id, and is delivered once; a resumed run that ends again, another.
 * Characters of run ids, dots and hex only: a BullMQ job id.
 */
export function deliveryId(manifest: Pick<Manifest, 'runId' | 'startedAt' | 'state'>, url: string): string {
  const hash = createHash('sha256').update(`${manifest.runId}\n${manifest.startedAt}\n${manifest.state}\n${url}`).digest('hex');
  return `${manifest.runId}.${manifest.state}.${hash.slice(0, 12)}`;
}

/** The deliveries of one run end: one per target that hears it (see targetsOf). */
export function deliveriesOf(manifest: Manifest, config: NotifyConfig): StoredWebhookDelivery[] {
  return targetsOf(manifest, config).map((url) => {
    const id = deliveryId(manifest, url);
    const body = webhookBody(manifest, id, config.publicUrl);
    return { id, url, body: JSON.stringify(body), folder: manifest.folder, events: body.events };
  });
}
