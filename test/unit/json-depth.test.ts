import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestedDeeperThan, textNestedDeeperThan } from '../../src/formats/json-depth.js';

/** `[[[…]]]` nested `levels` deep, parsed from its text as a row or a request body would be. */
const nested = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

/** The depth as a recursive walk counts it: the reference, for values shallow enough to recurse. */
function depth(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const members: unknown[] = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...members.map(depth));
}

describe('nestedDeeperThan', () => {
  it('counts an object or array as one level, and what it holds as one more', () => {
    expect(nestedDeeperThan(5, 0)).toBe(false);
    expect(nestedDeeperThan('text', 0)).toBe(false);
    expect(nestedDeeperThan({}, 0)).toBe(true);
    expect(nestedDeeperThan({}, 1)).toBe(false);
    expect(nestedDeeperThan({ a: [1] }, 1)).toBe(true);
    expect(nestedDeeperThan({ a: [1] }, 2)).toBe(false);
    expect(nestedDeeperThan({ a: 1, b: { c: { d: null } } }, 2)).toBe(true);
  });

  it('agrees with a recursive count on any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), (value, max) => {
        expect(nestedDeeperThan(value, max)).toBe(depth(value) > max);
      }),
      { numRuns: 500 },
    );
  });

  it('answers for values far deeper than any recursive walk could go', () => {
    const deep = nested(200_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(nestedDeeperThan(deep, 64)).toBe(true);
    expect(nestedDeeperThan(nested(64), 64)).toBe(false);
    expect(nestedDeeperThan(nested(65), 64)).toBe(true);
  });

  it('walks a container shared many times (YAML aliases) once, and ends on a cycle', () => {
    let shared: unknown[] = [1];
    for (let i = 0; i < 60; i++) shared = [shared, shared];
    expect(nestedDeeperThan(shared, 100)).toBe(false);
    expect(nestedDeeperThan(shared, 32)).toBe(true);
    const cycle: unknown[] = [];
    cycle.push(cycle);
    expect(nestedDeeperThan(cycle, 32)).toBe(false);
  });
});

describe('textNestedDeeperThan', () => {
  const text = (json: string) => Buffer.from(json, 'utf8');

  it('counts as nestedDeeperThan counts the parsed value, brackets in strings and their escapes aside', () => {
    expect(textNestedDeeperThan(text('5'), 0)).toBe(false);
    expect(textNestedDeeperThan(text('{}'), 0)).toBe(true);
    expect(textNestedDeeperThan(text(' [ {"a" : [1]} ] '), 2)).toBe(true);
    expect(textNestedDeeperThan(text(' [ {"a" : [1]} ] '), 3)).toBe(false);
    expect(textNestedDeeperThan(text('[{"a[[[": "]]]{{{"}]'), 2)).toBe(false);
    expect(textNestedDeeperThan(text(String.raw`["\\", [["\\\"[["]]]`), 3)).toBe(false);
    expect(textNestedDeeperThan(text(String.raw`["\\", [["\\\"[["]]]`), 2)).toBe(true);
  });

  it('agrees with nestedDeeperThan on the text of any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 10 }), fc.boolean(), (value, max, spaced) => {
        const json = JSON.stringify(value, null, spaced ? 1 : undefined) ?? 'null';
        expect(textNestedDeeperThan(text(json), max)).toBe(nestedDeeperThan(value, max));
      }),
      { numRuns: 500 },
    );
  });

  it('answers for text far deeper than a parse and a walk of it could go, before any parse', () => {
    const deep = `[{"rental_price":${'['.repeat(100_000)}${']'.repeat(100_000)}}]`;
    expect(textNestedDeeperThan(text(deep), 64)).toBe(true);
    expect(textNestedDeeperThan(text(`${'['.repeat(64)}${']'.repeat(64)}`), 64)).toBe(false);
    expect(textNestedDeeperThan(text(`${'{"a":'.repeat(65)}1${'}'.repeat(65)}`), 64)).toBe(true);
  });
});
