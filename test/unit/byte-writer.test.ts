import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteWriter } from '../../src/formats/byte-writer.js';

/** What a fresh writer holds after `write`. */
function written(write: (w: ByteWriter) => void): string {
  const w = new ByteWriter(4);
  write(w);
  return w.toString();
}

const chars = fc.constantFrom('a', '0', ' ', '"', '\\', '\n', '\u0001', '\u007f', 'é', '中', '😀', '\u2028', '\ud800');
const text = fc.string({ unit: chars, maxLength: 30 });
/** A string and a range of it. */
const ranged = text.chain((s) => fc.tuple(fc.constant(s), fc.nat(s.length), fc.nat(s.length)).map(([t, a, b]) => [t, Math.min(a, b), Math.max(a, b)] as const));

describe('ByteWriter', () => {
  it('writes text, or a range of it, as UTF-8', () => {
    fc.assert(
      fc.property(ranged, ([s, start, end]) => {
        const w = new ByteWriter(4);
        w.text(s, start, end);
        expect(w.take()).toEqual(Buffer.from(s.slice(start, end), 'utf8'));
      }),
    );
  });

  it('writes text, or a range of it, as JSON.stringify writes the string', () => {
    fc.assert(
      fc.property(ranged, ([s, start, end]) => {
        expect(written((w) => w.jsonString(s, start, end))).toBe(JSON.stringify(s.slice(start, end)));
      }),
    );
  });

  it('writes a number as String() does: integers, short decimals and any other double', () => {
    const decimal = fc.tuple(fc.integer({ min: -(10 ** 15), max: 10 ** 15 }), fc.nat(8)).map(([m, k]) => m / 10 ** k);
    fc.assert(
      fc.property(fc.oneof(decimal, fc.double(), fc.integer()), (n) => {
        expect(written((w) => w.number(n))).toBe(String(n));
      }),
      { numRuns: 5000 },
    );
    for (const n of [0, -0, 0.000001, 0.0000011, 1e-7, 999999.999999, 1e15 - 1, 1e15, 123456789012345.6, 3181.2, -0.9017, NaN, -Infinity]) {
      expect(written((w) => w.number(n))).toBe(String(n));
    }
  });

  it('hands over what it wrote and starts afresh', () => {
    const w = new ByteWriter(2);
    w.text('abc');
    w.byte(0x2c);
    w.number(1.5);
    expect(w.take().toString()).toBe('abc,1.5');
    expect(w.length).toBe(0);
    w.text('x');
    expect(w.toString()).toBe('x');
  });
});
