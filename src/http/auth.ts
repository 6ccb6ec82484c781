import { createHash, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Who may call an HTTP endpoint: the API bearer token (API_TOKEN) and, where a person signs in
 * with a browser, the dashboard's basic-auth credentials (DASHBOARD_USER/DASHBOARD_PASSWORD).
 */
export interface Credentials {
  token?: string;
  dashboard?: { user: string; password: string };
}

/** Whether any credential is configured; without one, endpoints are open (loopback only, or `--insecure`). */
export function hasCredentials(c: Credentials): boolean {
  return Boolean(c.token || c.dashboard);
}

/**
 * Whether a listening address is reachable from this machine only (127.0.0.0/8, ::1, localhost):
 * beyond it, endpoints are served only with credentials (or when the user insists).
 */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || (isIPv4(h) && h.startsWith('127.'));
}

/**
 * Compares a secret in constant time. Both sides are hashed first, so neither the content nor
 * the length of the expected secret shows in how long a wrong guess takes.
 */
export function safeEqual(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected)) && given.length === expected.length;
}

/** Whether an `Authorization` header carries the bearer token (or, where `basic` is allowed, the dashboard's credentials). */
export function authorized(header: string | undefined, c: Credentials, options: { basic: boolean }): boolean {
  if (!hasCredentials(c)) return true;
  const [scheme, value] = (header ?? '').split(' ', 2);
  if (!value) return false;
  if (scheme.toLowerCase() === 'bearer') return c.token !== undefined && safeEqual(value, c.token);
  if (scheme.toLowerCase() === 'basic' && options.basic && c.dashboard) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    // Both compared whatever the first gives, so a right user name does not answer faster.
    const user = safeEqual(decoded.slice(0, colon), c.dashboard.user);
    const password = safeEqual(decoded.slice(colon + 1), c.dashboard.password);
    return colon >= 0 && user && password;
  }
  return false;
}

/**
 * A fastify `onRequest` hook refusing requests without credentials (401). With `basic`, the
 * answer asks browsers for the dashboard's user and password.
 */
export function requireAuth(c: Credentials, options: { basic: boolean }) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (authorized(request.headers.authorization, c, options)) return;
    const challenge = options.basic && c.dashboard ? 'Basic realm="batch-scorer", charset="UTF-8"' : 'Bearer realm="batch-scorer"';
    await reply
      .code(401)
      .header('www-authenticate', challenge)
      .send({ error: 'E_UNAUTHORIZED', message: 'credentials missing or refused: send Authorization: Bearer <API_TOKEN>' });
  };
}
