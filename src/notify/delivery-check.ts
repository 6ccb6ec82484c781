import { checkOutput, type DeploymentPolicy } from '../config/index.js';
import { BatchScorerError, errorMessage } from '../errors.js';
import { basename, type Location, parseLocation } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { sealHolds } from './delivery-seal.js';
import { runEvents } from './notify-events.js';
import { targetsOf, type NotifyConfig } from './notify-config.js';
import type { RunEnd } from './run-end.js';
import { webhookBody } from './webhook-body.js';
import { deliveryId, type DeliveryJob, type WebhookDelivery } from './webhook-delivery.js';

/** What a delivery job is checked against: the deployment's targets and secret, and where runs may write. */
export interface DeliveryCheck {
  config: NotifyConfig;
  policy: DeploymentPolicy;
}

/**
 * A delivery job as it may be attempted, or a refusal (E_NOT_ALLOWED): its data, read through
 * deliveryJobSchema, may come from anyone who can write to Redis. It must carry the seal of the
 * deployment's NOTIFY_SECRET, be the job of its own delivery id, name a configured target that
 * hears its run end, and keep its run folder under OUTPUT_ROOTS, named after its run. Nothing is
 * sent or written before all of that holds; the body is built here, from the run end.
 */
export async function checkedDelivery(jobId: string | undefined, job: DeliveryJob, { config, policy }: DeliveryCheck): Promise<WebhookDelivery> {
  const { seal, ...fields } = job;
  const refuse = (why: string) => new BatchScorerError('E_NOT_ALLOWED', `delivery job ${excerpt(jobId ?? '?', 200)} refused: ${why}; nothing was sent`);
  if (!sealHolds(config.secret, fields, seal)) throw refuse("it is not sealed with this deployment's NOTIFY_SECRET");
  const { end, target } = fields;
  if (jobId !== fields.deliveryId) throw refuse('its job id is not its delivery id');
  const url = config.targets.get(target);
  if (url === undefined) throw refuse(`it names target ${target}, which neither NOTIFY_URLS nor a pipeline's notify.urls configures`);
  if (!targetsOf(end, config).includes(url)) throw refuse(`target ${target} does not hear this run end`);
  if (deliveryId(end, url) !== fields.deliveryId) throw refuse('its delivery id is not the one of its run end and target');
  const folder = await runFolder(end, policy, refuse);
  const body = webhookBody(end, fields.deliveryId, config.publicUrl);
  return { id: fields.deliveryId, url, body: JSON.stringify(body), folder, events: runEvents(end) };
}

/** The run end's folder, parsed, under OUTPUT_ROOTS and named after its run; null when it has none. */
async function runFolder(end: RunEnd, policy: DeploymentPolicy, refuse: (why: string) => Error): Promise<Location | null> {
  if (end.folder === null) return null;
  let folder: Location;
  try {
    folder = parseLocation(end.folder);
  } catch {
    throw refuse('its run folder is no location');
  }
  await checkOutput(policy, folder).catch((err: unknown) => {
    throw refuse(`its run folder is not allowed (${errorMessage(err)})`);
  });
  if (basename(folder) !== end.runId) throw refuse('its run folder is not named after its run');
  return folder;
}
