import { describe, expect, it } from 'vitest';
import { AuthThrottle, DEFAULT_THROTTLE_RULES, type ThrottleRules } from '../../src/http/auth-throttle.js';

const RULES: ThrottleRules = { failures: 3, windowMs: 1_000, lockoutMs: 10_000, maxLockoutMs: 35_000, forgetAfterMs: 100_000, maxClients: 100 };

/** Sends `n` failures from `client` at `now`; answers the lockout the last one caused. */
function fail(t: AuthThrottle, client: string, n: number, now: number): number {
  let locked = 0;
  for (let i = 0; i < n; i++) locked = t.failed(client, now);
  return locked;
}

describe('the throttle of failed authentication', () => {
  it('locks a client out at the limit within a window, and only that client', () => {
    const t = new AuthThrottle(RULES);
    expect(fail(t, 'a', 2, 0)).toBe(0);
    expect(t.lockedFor('a', 0)).toBe(0);
    expect(t.failed('a', 500)).toBe(10_000);
    expect(t.lockedFor('a', 500)).toBe(10_000);
    expect(t.lockedFor('a', 10_499)).toBe(1);
    expect(t.lockedFor('a', 10_500)).toBe(0);
    expect(t.lockedFor('b', 500)).toBe(0);
  });

  it('counts failures per window: as many spread over windows never lock', () => {
    const t = new AuthThrottle(RULES);
    for (let window = 0; window < 20; window++) expect(fail(t, 'a', RULES.failures - 1, window * RULES.windowMs)).toBe(0);
    expect(t.lockedFor('a', 20 * RULES.windowMs)).toBe(0);
  });

  it('doubles each further lockout up to the longest, and forgets a client quiet for forgetAfterMs', () => {
    const t = new AuthThrottle(RULES);
    let now = 0;
    const lockouts: number[] = [];
    for (let i = 0; i < 4; i++) {
      const locked = fail(t, 'a', RULES.failures, now);
      lockouts.push(locked);
      now += locked;
    }
    expect(lockouts).toEqual([10_000, 20_000, 35_000, 35_000]);
    // Its last failure was at `now - 35_000`: just short of forgetAfterMs later it is still remembered, then not.
    const last = now - 35_000;
    expect(fail(t, 'a', RULES.failures, last + RULES.forgetAfterMs - 1)).toBe(35_000);
    const later = last + RULES.forgetAfterMs - 1;
    expect(fail(t, 'a', RULES.failures, later + RULES.forgetAfterMs)).toBe(10_000);
  });

  it('remembers at most maxClients, however many addresses fail', () => {
    const t = new AuthThrottle(RULES);
    for (let i = 0; i < 10_000; i++) t.failed(`10.0.${i >> 8}.${i & 255}`, i);
    expect(t.size).toBe(RULES.maxClients);
    // The ones kept are the latest; the one failing now is among them.
    expect(fail(t, 'last', RULES.failures, 10_000)).toBe(RULES.lockoutMs);
    expect(t.size).toBe(RULES.maxClients);
  });

  it('by default lets ten refused credentials a minute through, then locks out for a minute', () => {
    const t = new AuthThrottle();
    expect(fail(t, 'a', DEFAULT_THROTTLE_RULES.failures - 1, 0)).toBe(0);
    expect(t.failed('a', 59_000)).toBe(60_000);
  });
});
