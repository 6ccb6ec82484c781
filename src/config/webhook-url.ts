/**
 * Why a webhook target, as NOTIFY_URLS or a pipeline's `notify.urls` writes it, is refused, or
 * undefined when it may be called. The answer never quotes the URL: its path or query may hold
 * the receiver's token (a Slack incoming webhook's path is one).
 */
export function webhookUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL: write http(s)://host[:port]/path';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'is not an http(s) URL: a webhook target is http(s)://host[:port]/path';
  if (url.username !== '' || url.password !== '') {
    return 'carries credentials (user:password@): leave them out';
  }
  return undefined;
}

/** What logs, records and pages show of a target: its origin, never its path or query (they may hold a token). */
export function targetOrigin(url: string): string {
  return new URL(url).origin;
}
