import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { excerpt, excerptStack, MESSAGE_BYTES, VALUE_BYTES } from '../../src/text-excerpt.js';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const MARKER = /\.\.\. (\d+) more bytes$/;

/** The part of an excerpt before its marker, and the N the marker says (undefined: nothing was cut). */
function split(result: string): { kept: string; more?: number } {
  const m = MARKER.exec(result);
  return m ? { kept: result.slice(0, m.index), more: Number(m[1]) } : { kept: result };
}

/** Any UTF-16 code unit, lone surrogates included: JavaScript strings may hold them. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

describe('excerpt', () => {
  it('keeps a text that fits, whole and unmarked', () => {
    expect(excerpt('short')).toBe('short');
    const fits = 'é'.repeat(VALUE_BYTES / 2);
    expect(excerpt(fits)).toBe(fits);
  });

  it('cuts a long text to the bound, saying how many bytes of UTF-8 were left out', () => {
    const long = 'x'.repeat(50 * 1024 * 1024);
    const shown = excerpt(long);
    expect(bytes(shown)).toBeLessThanOrEqual(VALUE_BYTES);
    const { kept, more } = split(shown);
    expect(kept).toMatch(/^x+$/);
    expect(more).toBe(long.length - kept.length);
    expect(bytes(excerpt(long, MESSAGE_BYTES))).toBeLessThanOrEqual(MESSAGE_BYTES);
  });

  it('never cuts a character in half', () => {
    // 4-byte characters (surrogate pairs in UTF-16) after one ASCII byte: every cut falls inside one unless it is careful.
    const text = `a${'😀'.repeat(1000)}`;
    const { kept, more } = split(excerpt(text, 100));
    expect(kept).toBe(`a${'😀'.repeat((kept.length - 1) / 2)}`);
    expect(Buffer.from(kept, 'utf8').toString('utf8')).toBe(kept);
    expect(more).toBe(bytes(text) - bytes(kept));
  });

  /** What holds of any excerpt: within the bound; the text itself, or a prefix of it and the exact N; no pair cut. Answers the result. */
  function checked(text: string, max: number): string {
    const result = excerpt(text, max);
    expect(bytes(result)).toBeLessThanOrEqual(max);
    const { kept, more } = split(result);
    if (more === undefined) {
      expect(result).toBe(text);
      return result;
    }
    expect(bytes(text)).toBeGreaterThan(max);
    expect(text.startsWith(kept)).toBe(true);
    expect(more).toBe(bytes(text) - bytes(kept));
    const last = kept.charCodeAt(kept.length - 1);
    const next = text.charCodeAt(kept.length);
    // The cut never falls between the two halves of a pair.
    expect(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff).toBe(false);
    return result;
  }

  it('holds for any text and bound: within the bound, a prefix of the text, N exact, valid UTF-8', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400, size: 'max' }), fc.integer({ min: 32, max: 600 }), (text, max) => {
        const result = checked(text, max);
        // Decoding the UTF-8 of the result gives it back: no half character was left at the cut.
        expect(Buffer.from(result, 'utf8').toString('utf8')).toBe(result);
      }),
    );
  });

  it('counts a lone surrogate as UTF-8 writes it (3 bytes) and keeps a pair whole, whatever the units', () => {
    fc.assert(
      fc.property(fc.string({ unit: anyUnit, maxLength: 300, size: 'max' }), fc.integer({ min: 32, max: 400 }), (text, max) => {
        checked(text, max);
      }),
    );
  });
});

describe('excerptStack', () => {
  it('bounds the message part of a stack and keeps its frames', () => {
    const err = new Error(`bad header ${'h'.repeat(1_000_000)}`);
    const stack = excerptStack(err.stack!);
    expect(bytes(stack)).toBeLessThanOrEqual(2 * MESSAGE_BYTES);
    expect(stack).toMatch(/^Error: bad header h+\.\.\. \d+ more bytes\n {4}at /);
    expect(stack).toContain('text-excerpt.test.ts');
  });

  it('leaves a stack of a short message as it is', () => {
    const err = new Error('short');
    expect(excerptStack(err.stack!)).toBe(err.stack);
  });
});
