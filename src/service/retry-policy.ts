/**
 * When and how long to wait before trying a request again, as data (undici's RetryHandler
 * style), so the rules can be read, tested and overridden in one place.
 */
export interface RetryPolicy {
  /** Tries after the first one; 0 disables retrying. */
  retries: number;
  /** HTTP statuses that mean overload or a passing network fault. */
  statuses: readonly number[];
  /** Node / undici error codes of a failed connection or a reset. */
  errorCodes: readonly string[];
  /**
   * Codes that mean nothing answers at the address (refused, unknown host, no route). At first
   * contact (describe at a run's start) they are the address being wrong, and fail at once;
   * once the service has answered, they are a restart or a network fault, and are retried.
   */
  unreachableCodes: readonly string[];
  /** First backoff delay in ms; doubled per attempt up to maxDelayMs, then jittered. */
  minDelayMs: number;
  maxDelayMs: number;
  /** A server's Retry-After above this is capped: a run should not sleep for hours on one header. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  retries: 6,
  statuses: [408, 429, 500, 502, 503, 504],
  errorCodes: [
    'ECONNRESET',
    'ECONNREFUSED',
    'ECONNABORTED',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'EPIPE',
    'ETIMEDOUT',
    'ENOTFOUND',
    'EAI_AGAIN',
    'EAI_FAIL',
    'UND_ERR_SOCKET',
    'UND_ERR_CONNECT_TIMEOUT',
    'UND_ERR_HEADERS_TIMEOUT',
    'UND_ERR_BODY_TIMEOUT',
    'UND_ERR_CLOSED',
    'E_REQUEST_TIMEOUT',
  ],
  unreachableCodes: ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'],
  minDelayMs: 200,
  maxDelayMs: 15_000,
  maxRetryAfterMs: 120_000,
};

/**
 * The delay before retry number `attempt` (1-based): exponential with jitter (half fixed, half
 * random) so that many clients failing together do not come back together. A server's
 * Retry-After is a floor: never sooner than it asks (capped at maxRetryAfterMs), and never
 * sooner than the backoff, so a "Retry-After: 0" under load does not turn into a busy loop.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, retryAfterMs?: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** (attempt - 1));
  const backoff = Math.round(ceiling / 2 + (random() * ceiling) / 2);
  return retryAfterMs === undefined ? backoff : Math.max(backoff, Math.min(retryAfterMs, policy.maxRetryAfterMs));
}

/** Retry-After as delta-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text.trim())) return Math.round(Number(text) * 1000);
  // Only an HTTP date (IMF-fixdate); Date.parse alone takes "1 2" or "-5" for dates.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text.trim())) return undefined;
  return Math.max(0, Date.parse(text) - now);
}
