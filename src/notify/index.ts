/**
 * Webhooks of a run's end: which targets hear which ends, the signed body, one delivery attempt
 * and its record. Delivered by the process itself (`score`, a judgement) or through the
 * notifications queue (queue/'s queuedNotifier).
 */

// Who is told: the targets of NOTIFY_URLS and of pipelines' `notify`.
export { notifyConfig } from './notify-config.js';
export { pipelineNotifySchema, type PipelineNotify } from './pipeline-notify.js';

// Delivered by the process that ended the run.
export { directNotifier } from './direct-notifier.js';

// The parts a queued delivery is made of: its job, its checks, one attempt, its retry delay.
export { deliveriesOf, deliveryJobSchema, type DeliveryJob, type WebhookDelivery } from './webhook-delivery.js';
export { checkedDelivery, type DeliveryCheck } from './delivery-check.js';
export { attemptDelivery } from './delivery-attempt.js';
export { webhookRetryDelayMs } from './webhook-retry.js';

// What was delivered, as the run folder records it (for the run page).
export { readDeliveryRecords, type DeliveryRecord } from './delivery-record.js';
