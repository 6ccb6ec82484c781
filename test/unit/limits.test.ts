import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, FIXED_BOUNDS, formatFixedBound, formatLimit, LIMITS, limitError, limitsFromEnv } from '../../src/config/limits.js';
import { MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH } from '../../src/config/run-options.js';
import { MAX_ROW_DEPTH } from '../../src/formats/row-parser.js';
import { BODY_LIMIT_BYTES } from '../../src/http/http-errors.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../src/http/idempotency-key.js';
import { MAX_PENDING } from '../../src/lineage/lineage-sender.js';
import { MAX_TARGETS } from '../../src/notify/pipeline-notify.js';
import { MESSAGE_BYTES as WEBHOOK_MESSAGE_BYTES } from '../../src/notify/run-end.js';
import { MAX_JSONL_KEYS } from '../../src/scoring/plan.js';
import { MESSAGE_BYTES } from '../../src/text-excerpt.js';
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

describe('the fixed bounds listed in docs/limits.md', () => {
  it('are the values the code holds', () => {
    const held: Record<string, number> = {
      'http/http-errors.ts BODY_LIMIT_BYTES': BODY_LIMIT_BYTES,
      'http/idempotency-key.ts MAX_IDEMPOTENCY_KEY_LENGTH': MAX_IDEMPOTENCY_KEY_LENGTH,
      'config/run-options.ts MAX_PARAMS_BYTES': MAX_PARAMS_BYTES,
      'config/run-options.ts MAX_PARAMS_DEPTH': MAX_PARAMS_DEPTH,
      'formats/row-parser.ts MAX_ROW_DEPTH': MAX_ROW_DEPTH,
      'scoring/plan.ts MAX_JSONL_KEYS': MAX_JSONL_KEYS,
      'text-excerpt.ts MESSAGE_BYTES': MESSAGE_BYTES,
      'notify/pipeline-notify.ts MAX_TARGETS': MAX_TARGETS,
      'notify/run-end.ts MESSAGE_BYTES': WEBHOOK_MESSAGE_BYTES,
      'lineage/lineage-sender.ts MAX_PENDING': MAX_PENDING,
    };
    expect(Object.fromEntries(FIXED_BOUNDS.map((b) => [b.constant, b.value]))).toEqual(held);
    expect(FIXED_BOUNDS.map(formatFixedBound)).toContain('64 KiB');
  });
});
