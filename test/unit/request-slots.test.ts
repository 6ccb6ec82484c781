import { describe, expect, it } from 'vitest';
import { AUTO_SLOTS, AdaptiveSlots, PROBE_AFTER_MS, createRequestSlots, fixedSlots, maxConcurrency } from '../../src/service/request-slots.js';

describe('fixedSlots', () => {
  it('never runs more than N at once, and ignores outcomes', async () => {
    const slots = fixedSlots(3);
    let running = 0;
    let peak = 0;
    const task = async () => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setImmediate(r));
      running--;
    };
    await Promise.all(Array.from({ length: 20 }, () => slots.run(task)));
    expect(peak).toBe(3);
    slots.observe('overloaded');
    expect(slots.concurrency).toBe(3);
  });
});

describe('AdaptiveSlots (--concurrency auto)', () => {
  const bounds = { initial: 2, min: 1, max: 6 };

  it('adds a slot after as many answered requests in a row as it has slots, up to its maximum', () => {
    const slots = new AdaptiveSlots(bounds, () => 0);
    const grown: number[] = [];
    for (let i = 0; i < 30; i++) {
      slots.observe('answered');
      grown.push(slots.concurrency);
    }
    // 2 answers to reach 3, 3 to reach 4, 4 to reach 5, 5 to reach 6, then it stays.
    expect(grown.slice(0, 14)).toEqual([2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6]);
    expect(grown.at(-1)).toBe(6);
  });

  it('steps one below the level an overload met, halves when overloads follow each other, never below its minimum', () => {
    let now = 0;
    const slots = new AdaptiveSlots({ ...bounds, initial: 6 }, () => now);
    slots.observe('answered', 100); // round trips of 100 ms
    slots.observe('overloaded');
    expect(slots.concurrency).toBe(5);
    now += 150;
    slots.observe('overloaded'); // a request sent into the same overload
    expect(slots.concurrency).toBe(5);
    now += 100;
    slots.observe('overloaded'); // again, soon after: the service got slower
    expect(slots.concurrency).toBe(2);
    now += 300;
    slots.observe('overloaded');
    expect(slots.concurrency).toBe(1);
    now += 300;
    slots.observe('overloaded');
    expect(slots.concurrency).toBe(1);
  });

  it('holds one below the ceiling an overload found, and tries it again only after a while', () => {
    let now = 0;
    const slots = new AdaptiveSlots({ initial: 2, min: 1, max: 16 }, () => now);
    const answerRound = () => {
      for (let i = slots.concurrency; i > 0; i--) slots.observe('answered', 50);
      now += 50;
    };
    while (slots.concurrency < 9) answerRound();
    slots.observe('overloaded'); // the service takes 8
    expect(slots.concurrency).toBe(8);
    for (let r = 0; r < 100; r++) answerRound(); // 5 s of round trips: it holds at 8
    expect(slots.concurrency).toBe(8);
    now += PROBE_AFTER_MS;
    answerRound();
    expect(slots.concurrency).toBe(9);
    slots.observe('overloaded');
    expect(slots.concurrency).toBe(8);
  });

  it('neither grows nor shrinks on failures that say nothing about load', () => {
    const slots = new AdaptiveSlots({ ...bounds, initial: 4 }, () => 0);
    for (let i = 0; i < 10; i++) slots.observe('failed');
    expect(slots.concurrency).toBe(4);
  });

  it('never starts or grows past its maximum', () => {
    const slots = new AdaptiveSlots({ ...AUTO_SLOTS, max: 3 });
    expect(slots.concurrency).toBe(2);
    for (let i = 0; i < 50; i++) slots.observe('answered', 10);
    expect(slots.concurrency).toBe(3);
    expect(new AdaptiveSlots({ ...AUTO_SLOTS, max: 1 }).concurrency).toBe(1);
  });

  it('starts counting answers again after an overload', () => {
    let now = 0;
    const slots = new AdaptiveSlots({ ...bounds, initial: 4 }, () => now);
    slots.observe('answered');
    slots.observe('answered');
    slots.observe('answered');
    now = 5_000;
    slots.observe('overloaded');
    expect(slots.concurrency).toBe(3);
    for (let i = 0; i < 6; i++) slots.observe('answered');
    expect(slots.concurrency).toBe(3); // one below the ceiling of 4, held
    now += PROBE_AFTER_MS; // long enough to try the ceiling again: three answers in a row, counted afresh
    slots.observe('answered');
    slots.observe('answered');
    expect(slots.concurrency).toBe(3);
    slots.observe('answered');
    expect(slots.concurrency).toBe(4);
  });
});

describe('createRequestSlots and maxConcurrency', () => {
  it('make auto adaptive, between 2 and 16, and a number fixed', () => {
    expect(createRequestSlots('auto')).toBeInstanceOf(AdaptiveSlots);
    expect(createRequestSlots('auto').concurrency).toBe(2);
    expect(createRequestSlots(5).concurrency).toBe(5);
    expect(maxConcurrency('auto')).toBe(16);
    expect(maxConcurrency(5)).toBe(5);
  });
});
