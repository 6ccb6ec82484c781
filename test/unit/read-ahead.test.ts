import { describe, expect, it } from 'vitest';
import { ReadAhead } from '../../src/scoring/read-ahead.js';

const takeAll = (r: ReadAhead) => {
  let n = 0;
  while (r.tryTake()) n++;
  return n;
};

describe('ReadAhead', () => {
  it('allows a batch per slot and one ready, plus a spare per slot for small batches within 2,000 rows', () => {
    expect(takeAll(new ReadAhead(() => 4, 1000))).toBe(4 + 1 + 2);
    expect(takeAll(new ReadAhead(() => 16, 100))).toBe(16 + 1 + 16);
    expect(takeAll(new ReadAhead(() => 4, 5000))).toBe(4 + 1);
  });

  it('follows the slots as they move, and wakes a waiter when a turn comes back', async () => {
    let slots = 2;
    const r = new ReadAhead(() => slots, 100_000);
    expect(takeAll(r)).toBe(3);
    const woken = r.released();
    r.release();
    await woken;
    expect(r.tryTake()).toBe(true);
    slots = 1; // auto cut the limit: no turn until enough come back
    r.release();
    expect(r.tryTake()).toBe(false);
    r.release();
    expect(r.tryTake()).toBe(true);
  });
});
