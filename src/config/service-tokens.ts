/**
 * Bearer tokens by service origin (scheme, host and port, as URL's `origin` writes it):
 * MODEL_SERVICE_TOKEN under the origin of MODEL_SERVICE_URL, and SERVICE_TOKENS' own entries. A
 * service whose origin has no entry gets no token: a run naming another host never carries the
 * deployment's credentials there.
 */
export type ServiceTokens = ReadonlyMap<string, string>;

/** The token a service gets, or none: the one place that chooses. */
export function tokenFor(tokens: ServiceTokens, serviceUrl: string): string | undefined {
  let origin: string;
  try {
    origin = new URL(serviceUrl).origin;
  } catch {
    return undefined;
  }
  return tokens.get(origin);
}
