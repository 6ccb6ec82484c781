import { TOOL } from '../version.js';
import type { WebhookDelivery } from './webhook-delivery.js';
import { DELIVERY_HEADER, SIGNATURE_HEADER, webhookSignature } from './webhook-signature.js';

/** How long one attempt waits for the receiver's answer. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** What an attempt's answer means: taken, worth another attempt, or refused for good. */
export type AttemptVerdict = 'delivered' | 'retry' | 'give-up';

export interface AttemptResult {
  verdict: AttemptVerdict;
  /** The receiver's HTTP status; null when it gave none. */
  status: number | null;
  /** Why no status came (a code such as ECONNREFUSED, or the timeout), never the URL. */
  error: string | null;
  /** The failure itself, for the log. */
  cause?: unknown;
}

/**
 * 2xx is delivered. 408, 429 and 5xx are passing: tried again. Any other status (a 4xx, or a
 * redirect, which is not followed: a signed body goes only where it was configured to) is the
 * receiver refusing the delivery, and trying again would not change its mind.
 */
export function verdictOf(status: number): AttemptVerdict {
  if (status >= 200 && status < 300) return 'delivered';
  return status === 408 || status === 429 || status >= 500 ? 'retry' : 'give-up';
}

/** One attempt: the body POSTed, signed now, with the delivery's id; no answer within `timeoutMs` is a passing failure. */
export async function postWebhook(
  delivery: Pick<WebhookDelivery, 'id' | 'url' | 'body'>,
  secret: string,
  timeoutMs: number = WEBHOOK_TIMEOUT_MS,
): Promise<AttemptResult> {
  try {
    const answer = await fetch(delivery.url, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/json',
        'user-agent': `${TOOL.name}/${TOOL.version}`,
        [SIGNATURE_HEADER]: webhookSignature(secret, delivery.body),
        [DELIVERY_HEADER]: delivery.id,
      },
      body: delivery.body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    // Its answer's body is not read: only its status counts, and the connection is let go.
    await answer.body?.cancel().catch(() => undefined);
    return { verdict: verdictOf(answer.status), status: answer.status, error: null };
  } catch (err) {
    return { verdict: 'retry', status: null, error: reason(err, timeoutMs), cause: err };
  }
}

/** A failure to get an answer in a word: fetch's cause code (ECONNREFUSED, ENOTFOUND) or the timeout. */
function reason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  const cause = (err as { cause?: { code?: unknown; name?: unknown } }).cause;
  const code = cause?.code ?? cause?.name ?? (err as Error).name;
  return typeof code === 'string' ? code : 'no answer';
}
