import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, formatLimit, LIMITS, limitError, limitsFromEnv } from '../../src/config/limits.js';
import { ENV_SETTINGS } from '../../src/config/settings-catalogue.js';

describe('the limits table', () => {
  it('takes each default when its variable is unset', () => {
    expect(limitsFromEnv({})).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS.answerBytes).toBe(64 * 1024 * 1024);
  });

  it('reads bytes with or without a suffix, and counts as plain numbers', () => {
    const limits = limitsFromEnv({ MAX_ANSWER_BYTES: '256MiB', MAX_DESCRIBE_BYTES: '2048', MAX_SEGMENTS: '50', MAX_FIELD_BYTES: '1.5 KiB' });
    expect(limits.answerBytes).toBe(256 * 1024 * 1024);
    expect(limits.describeBytes).toBe(2048);
    expect(limits.segments).toBe(50);
    expect(limits.fieldBytes).toBe(1536);
  });

  it('refuses a value below the smallest, a suffix on a count, or text, naming the variable', () => {
    expect(() => limitsFromEnv({ MAX_SEGMENTS: '0' })).toThrow(/MAX_SEGMENTS must be a number of at least 1; it is "0"/);
    expect(() => limitsFromEnv({ MAX_SEGMENTS: '10k' })).toThrow(/MAX_SEGMENTS/);
    expect(() => limitsFromEnv({ MAX_ANSWER_BYTES: 'lots' })).toThrow(/MAX_ANSWER_BYTES must be a number of bytes/);
    expect(() => limitsFromEnv({ MAX_ANSWER_BYTES: '12' })).toThrow(/at least 1024/);
  });

  it('lists every bound among the environment settings', () => {
    const names = new Set(ENV_SETTINGS.map((s) => s.name));
    for (const spec of Object.values(LIMITS)) expect(names).toContain(spec.setting);
  });

  it('names the setting and its value in the error past a bound', () => {
    const err = limitError('describeBytes', 16 * 1024 * 1024, 'the describe answer of m');
    expect(err.code).toBe('E_LIMIT');
    expect(err.message).toBe('the describe answer of m passes MAX_DESCRIBE_BYTES (16 MiB): raise MAX_DESCRIBE_BYTES if this is expected');
    expect(formatLimit('segments', 10_000)).toBe('10,000');
    expect(formatLimit('answerBytes', 1536)).toBe('1,536 bytes');
  });
});
