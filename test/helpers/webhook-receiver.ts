import { createHmac, timingSafeEqual } from 'node:crypto';
import { startForeignListener, type RecordedRequest } from './foreign-listener.js';

/** A delivery the receiver took (answered 2xx), with when it came. */
export interface AcceptedDelivery {
  id: string;
  body: Record<string, unknown>;
  at: number;
}

/**
 * A webhook receiver as a team would write one, on a real HTTP server of loopback: it checks each
 * request's X-Batch-Scorer-Signature against `secret` (HMAC recomputed here, `t` within five
 * minutes), answers 401 to a bad one, 500 to the first `failFirst` attempts of each delivery id,
 * and 200 afterwards, keeping the first body it took of each id apart from any duplicate.
 */
export async function startWebhookReceiver(secret: string, { failFirst = 0 } = {}) {
  const attempts = new Map<string, number>();
  const accepted: AcceptedDelivery[] = [];
  const duplicates: string[] = [];
  const refused: string[] = [];
  const listener = await startForeignListener((request) => {
    const problem = signatureProblem(request, secret);
    if (problem) {
      refused.push(problem);
      return 401;
    }
    const id = String(request.headers['x-batch-scorer-delivery']);
    const n = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, n);
    if (n <= failFirst) return 500;
    if (accepted.some((a) => a.id === id)) duplicates.push(id);
    else accepted.push({ id, body: JSON.parse(request.body) as Record<string, unknown>, at: Date.now() });
    return 200;
  });
  return {
    url: `${listener.url}/hooks/batch?token=receiver-secret`,
    requests: listener.requests,
    accepted,
    duplicates,
    refused,
    attempts,
    close: () => listener.close(),
  };
}

/** Why a request's signature does not hold, or undefined when it does. */
function signatureProblem(request: RecordedRequest, secret: string): string | undefined {
  const header = request.headers['x-batch-scorer-signature'];
  const parts = typeof header === 'string' ? /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) : null;
  if (!parts) return `malformed signature header ${String(header)}`;
  const [, t, v1] = parts;
  if (Math.abs(Date.now() / 1000 - Number(t)) > 300) return `t=${t} is not recent`;
  const expected = createHmac('sha256', secret).update(`${t}.${request.body}`).digest();
  return timingSafeEqual(expected, Buffer.from(v1, 'hex')) ? undefined : 'signature does not match';
}
