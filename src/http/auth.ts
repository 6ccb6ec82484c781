import { createHash, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorSpec } from '../errors.js';
import { AuthThrottle } from './auth-throttle.js';

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

/** How `requireAuth` checks a request. */
export interface AuthOptions {
  /** Whether the dashboard's basic-auth credentials are taken besides the bearer token (a person with a browser). */
  basic: boolean;
  /** Failed attempts per client: one for all the routes of a server, so a guesser cannot spread its guesses over them. */
  throttle: AuthThrottle;
}

/**
 * A fastify `onRequest` hook refusing requests without credentials (401). With `basic`, the
 * answer asks browsers for the dashboard's user and password. A client (remote address) that
 * sent refused credentials too often is answered 429 E_RATE_LIMITED with Retry-After until its
 * lockout ends (see AuthThrottle); a right credential costs nothing more.
 */
export function requireAuth(c: Credentials, options: AuthOptions) {
  const { throttle } = options;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const locked = throttle.lockedFor(request.ip);
    if (locked > 0) {
      const seconds = Math.ceil(locked / 1000);
      await reply
        .code(errorSpec('E_RATE_LIMITED').status)
        .header('retry-after', String(seconds))
        .send({
          error: 'E_RATE_LIMITED',
          message: `too many refused credentials from this address: try again in ${seconds} s, with the right API_TOKEN or dashboard login`,
        });
      return;
    }
    if (authorized(request.headers.authorization, c, options)) return;
    if (request.headers.authorization !== undefined) {
      const lockedNow = throttle.failed(request.ip);
      if (lockedNow > 0) request.log.warn({ client: request.ip, lockedForMs: lockedNow }, 'too many refused credentials: client locked out');
    }
    const challenge = options.basic && c.dashboard ? 'Basic realm="batch-scorer", charset="UTF-8"' : 'Bearer realm="batch-scorer"';
    await reply
      .code(errorSpec('E_UNAUTHORIZED').status)
      .header('www-authenticate', challenge)
      .send({ error: 'E_UNAUTHORIZED', message: 'credentials missing or refused: send Authorization: Bearer <API_TOKEN>' });
  };
}

/** The authentication of one server, as `onRequest` hooks sharing its credentials and its one throttle. */
export interface ServerAuth {
  /** The bearer token only: the run API, `/metrics`, `POST /events/s3`. */
  api: ReturnType<typeof requireAuth>;
  /** The bearer token or the dashboard's basic-auth login: `/ui`. */
  ui: ReturnType<typeof requireAuth>;
}

/** The hooks of one server; a client's failures on any of its routes count together. */
export function serverAuth(c: Credentials): ServerAuth {
  const throttle = new AuthThrottle();
  return { api: requireAuth(c, { basic: false, throttle }), ui: requireAuth(c, { basic: true, throttle }) };
}
