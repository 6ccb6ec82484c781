import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Manifest } from '../scoring/index.js';
import type { Location } from '../storage/index.js';
import { deliverySeal } from './delivery-seal.js';
import type { NotifyEvent } from './notify-events.js';
import { targetsOf, type NotifyConfig } from './notify-config.js';
import { runEndOf, runEndSchema, type RunEnd } from './run-end.js';
import { TARGET_NAME, targetName } from './target-name.js';

const unsealed = {
  /** `<runId>.<state>.<12 hex>` (see deliveryId): the job's id too, and the name of its record in the run folder. */
  deliveryId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$/, { message: 'must be a delivery id: <runId>.<state>.<12 hex>' }),
  /** The target, by name (see targetName): never its URL. */
  target: z.string().regex(TARGET_NAME, { message: 'must be a target name: 16 hex digits' }),
  /** The run end told: the body is built from it where the delivery is attempted. */
  end: runEndSchema,
};
const unsealedSchema = z.object(unsealed).strict();

/**
 * The notifications queue's job data: one run end told to one configured target, sealed with a
 * key of NOTIFY_SECRET (see deliverySeal). No URL and no body: the worker attempting it finds the
 * URL by the target's name in its own settings, and builds the body from the run end.
 */
export const deliveryJobSchema = z.object({ ...unsealed, seal: z.string().regex(/^[0-9a-f]{64}$/, { message: 'must be a seal: 64 hex digits' }) }).strict();
export type DeliveryJob = z.output<typeof deliveryJobSchema>;

/** A delivery as it is attempted, once checked (see checkedDelivery): the same id, body and target on every attempt. */
export interface WebhookDelivery {
  id: string;
  /** The target's URL, as configured. */
  url: string;
  /** The JSON body as sent; signatures are made over it. */
  body: string;
  /** The run folder, where the delivery's outcome is recorded (null: the run has none). */
  folder: Location | null;
  /** The end's events, for the record. */
  events: NotifyEvent[];
}

/**
 * A delivery's id, derived from what identifies the run end (run id, start of the attempt that
 * ended, end state) and the target: a run end told twice (a run job taken again after its worker
 * stalled) gives the same id, and is delivered once; a resumed run that ends again, another.
 * Characters of run ids, dots and hex only: a BullMQ job id and a file name.
 */
export function deliveryId(end: Pick<RunEnd, 'runId' | 'startedAt' | 'state'>, url: string): string {
  const hash = createHash('sha256').update(`${end.runId}\n${end.startedAt}\n${end.state}\n${url}`).digest('hex');
  return `${end.runId}.${end.state}.${hash.slice(0, 12)}`;
}

/** A delivery job, sealed: `fields` read through the schema first, as the worker checking it reads them. */
export function sealedDelivery(secret: string, fields: z.input<typeof unsealedSchema>): DeliveryJob {
  const read = unsealedSchema.parse(fields);
  return { ...read, seal: deliverySeal(secret, read) };
}

/** The delivery jobs of one run end: one per target that hears it (see targetsOf). */
export function deliveriesOf(manifest: Manifest, config: NotifyConfig): DeliveryJob[] {
  const end = runEndOf(manifest);
  return targetsOf(end, config).map((url) => sealedDelivery(config.secret, { deliveryId: deliveryId(end, url), target: targetName(url), end }));
}
