/**
 * How failed authentication is throttled per client, as data: a few refused credentials in a
 * window are a typo, more are someone guessing.
 */
export interface ThrottleRules {
  /** Refused credentials a client may send within one window; the one that reaches it locks the client out. */
  failures: number;
  /** The window the failures are counted in, in ms; it starts at a client's first failure. */
  windowMs: number;
  /** The first lockout, in ms; each further lockout of the same client doubles it, up to maxLockoutMs. */
  lockoutMs: number;
  /** The longest lockout. */
  maxLockoutMs: number;
  /** A client that has failed no more for this long is forgotten, lockouts and all; at least maxLockoutMs. */
  forgetAfterMs: number;
  /**
   * How many clients are remembered at most, so that an attacker with many addresses cannot grow
   * the memory without bound: beyond it, the client whose last failure is oldest is forgotten.
   */
  maxClients: number;
}

export const DEFAULT_THROTTLE_RULES: ThrottleRules = {
  failures: 10,
  windowMs: 60_000,
  lockoutMs: 60_000,
  maxLockoutMs: 60 * 60_000,
  forgetAfterMs: 24 * 60 * 60_000,
  maxClients: 10_000,
};

interface ClientFailures {
  windowStart: number;
  failures: number;
  lastFailure: number;
  lockouts: number;
  lockedUntil: number;
}

/**
 * Failed authentication per client (a remote address). Only refused credentials count: a
 * request without any (a browser's first, before it asks for the login) is no guess, and a
 * success neither counts nor resets, so a user on the same address as a guesser does not give
 * the guesser fresh tries. While a client is locked out, all its requests are refused unchecked:
 * otherwise an answer other than 429 would tell a guesser it had found the secret.
 */
export class AuthThrottle {
  /** In order of last failure (a client is re-inserted on each), so the first is the one to forget. */
  private readonly clients = new Map<string, ClientFailures>();

  constructor(private readonly rules: ThrottleRules = DEFAULT_THROTTLE_RULES) {}

  /** How long, in ms, `client` must wait before it is heard again; 0 when it is not locked out. */
  lockedFor(client: string, now = Date.now()): number {
    const entry = this.clients.get(client);
    return entry ? Math.max(0, entry.lockedUntil - now) : 0;
  }

  /** Records refused credentials from `client`; answers how long it is now locked out for (0: not). */
  failed(client: string, now = Date.now()): number {
    const { rules } = this;
    const entry = this.clients.get(client) ?? { windowStart: now, failures: 0, lastFailure: now, lockouts: 0, lockedUntil: 0 };
    if (now - entry.lastFailure >= rules.forgetAfterMs) entry.lockouts = 0;
    if (now - entry.windowStart >= rules.windowMs) Object.assign(entry, { windowStart: now, failures: 0 });
    entry.failures += 1;
    entry.lastFailure = now;
    if (entry.failures >= rules.failures) {
      entry.lockedUntil = now + Math.min(rules.maxLockoutMs, rules.lockoutMs * 2 ** entry.lockouts);
      entry.lockouts += 1;
      // The next window starts once the lockout ends, with no failure in it yet.
      Object.assign(entry, { windowStart: entry.lockedUntil, failures: 0 });
    }
    this.clients.delete(client);
    this.clients.set(client, entry);
    this.forgetBeyond(rules.maxClients, now);
    return this.lockedFor(client, now);
  }

  /** How many clients are remembered (for tests of the bound). */
  get size(): number {
    return this.clients.size;
  }

  /**
   * Forgets the clients that failed no more for forgetAfterMs (their lockouts are over), then the
   * oldest, down to `max`. The map is in order of last failure, so the sweep stops at the first
   * client it keeps.
   */
  private forgetBeyond(max: number, now: number): void {
    for (const [client, entry] of this.clients) {
      if (this.clients.size <= max && now - entry.lastFailure < this.rules.forgetAfterMs) return;
      this.clients.delete(client);
    }
  }
}
