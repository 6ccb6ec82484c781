/** The Model Query Service: its client, request slots (concurrency), retries and errors. */

// The client and what its calls take and answer.
export { EnvelopedRows, predictBody, predictEnvelope, ServiceClient, type CallOptions, type Envelope, type PredictOptions, type RowsJson } from './client.js';
export type { AnswerBounds } from './answer-bounds.js';
export { NotAnObject, type PickedRow } from './json-members.js';
export { formatModelRef, parseModelRef, type ModelRef } from './model-ref.js';
export { ServiceError } from './service-error.js';

// How many requests are in flight (fixed, or found by probing), and how failed ones are retried.
export { AUTO_SLOTS, createRequestSlots, fixedSlots, maxConcurrency, PROBE_AFTER_MS, type RequestOutcome, type RequestSlots } from './request-slots.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, type RetryPolicy } from './retry-policy.js';
