import type { RunOptions } from '../config/run-options.js';
import type { Logger } from '../log.js';
import { ServiceClient } from '../service/client.js';
import { DEFAULT_RETRY_POLICY } from '../service/retry-policy.js';

/**
 * The Model Query Service client a run's options ask for: its service, time limit and retries,
 * with `connections` kept alive (as many as requests may be in flight) and the token, never logged.
 */
export function runServiceClient(
  options: Pick<RunOptions, 'service' | 'timeout' | 'retries'>,
  ctx: { token?: string; connections: number; log: Logger },
): ServiceClient {
  return new ServiceClient({
    baseUrl: options.service,
    token: ctx.token,
    timeoutMs: options.timeout,
    retry: { ...DEFAULT_RETRY_POLICY, retries: options.retries },
    connections: ctx.connections,
    logger: ctx.log,
  });
}
