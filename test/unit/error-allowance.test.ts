import { describe, expect, it } from 'vitest';
import { MemoryErrorAllowance, quarantineAllowance } from '../../src/scoring/error-allowance.js';

describe("a run's error allowance in one process", () => {
  it('allows the floor of rows x --max-error-rate', () => {
    expect(quarantineAllowance(12_000, 0.01)).toBe(120);
    expect(quarantineAllowance(99, 0.01)).toBe(0);
  });

  it("sums its segments' counts with those a resumed run finished before, and stays past its allowance once past", () => {
    const allowance = new MemoryErrorAllowance(10, new Map([[0, 4]]));
    expect(allowance.report(1, 3)).toBe(false);
    // A segment reports its count so far, which replaces what it reported before.
    expect(allowance.report(1, 6)).toBe(false);
    expect(allowance.used).toBe(10);
    expect(allowance.report(2, 1)).toBe(true);
    expect(allowance.used).toBe(11);
    expect(allowance.report(2, 1)).toBe(true);
  });

  it('is past from the start when the segments a resumed run finished are', () => {
    expect(new MemoryErrorAllowance(3, new Map([[0, 4]])).report(1, 0)).toBe(true);
  });
});

describe('the error allowance of a run scored while it is planned', () => {
  it('goes past nothing until the rows are counted, then past what the allowance says', () => {
    const allowance = new MemoryErrorAllowance(Infinity);
    expect(allowance.report(0, 50)).toBe(false);
    allowance.allow(quarantineAllowance(1_000, 0.01));
    expect(allowance.allowed).toBe(10);
    expect(allowance.report(1, 0)).toBe(true);
  });
});
