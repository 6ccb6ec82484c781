import { DEFAULT_RETRY_POLICY, retryDelayMs, type RetryPolicy } from '../service/index.js';

/**
 * When a webhook is tried again: the project's backoff (see retryDelayMs: doubling, half fixed and
 * half random, so that deliveries failing together do not come back together), from 1 s and at
 * most 8 s apart: attempts 2 to 5 come 0.5 to 1, 1 to 2, 2 to 4 and 4 to 8 s after the one before.
 */
const WEBHOOK_RETRY: RetryPolicy = { ...DEFAULT_RETRY_POLICY, minDelayMs: 1_000, maxDelayMs: 8_000 };

/** The wait after the `attempt`th attempt of a delivery failed (1-based) before the next one. */
export function webhookRetryDelayMs(attempt: number): number {
  return retryDelayMs(WEBHOOK_RETRY, attempt);
}
