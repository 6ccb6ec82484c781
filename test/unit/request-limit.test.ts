import { describe, expect, it } from 'vitest';
import { AUTO_LIMIT, AdaptiveLimit, PROBE_AFTER_MS, createRequestLimit, fixedLimit, maxConcurrency } from '../../src/service/request-limit.js';

describe('fixedLimit', () => {
  it('never runs more than N at once, and ignores outcomes', async () => {
    const limit = fixedLimit(3);
    let running = 0;
    let peak = 0;
    const task = async () => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setImmediate(r));
      running--;
    };
    await Promise.all(Array.from({ length: 20 }, () => limit.run(task)));
    expect(peak).toBe(3);
    limit.observe('overloaded');
    expect(limit.concurrency).toBe(3);
  });
});

describe('AdaptiveLimit (--concurrency auto)', () => {
  const bounds = { initial: 2, min: 1, max: 6 };

  it('adds a slot after as many answered requests in a row as it has slots, up to its maximum', () => {
    const limit = new AdaptiveLimit(bounds, () => 0);
    const grown: number[] = [];
    for (let i = 0; i < 30; i++) {
      limit.observe('answered');
      grown.push(limit.concurrency);
    }
    // 2 answers to reach 3, 3 to reach 4, 4 to reach 5, 5 to reach 6, then it stays.
    expect(grown.slice(0, 14)).toEqual([2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6]);
    expect(grown.at(-1)).toBe(6);
  });

  it('steps one below the level an overload met, halves when overloads follow each other, never below its minimum', () => {
    let now = 0;
    const limit = new AdaptiveLimit({ ...bounds, initial: 6 }, () => now);
    limit.observe('answered', 100); // round trips of 100 ms
    limit.observe('overloaded');
    expect(limit.concurrency).toBe(5);
    now += 150;
    limit.observe('overloaded'); // a request sent into the same overload
    expect(limit.concurrency).toBe(5);
    now += 100;
    limit.observe('overloaded'); // again, soon after: the service got slower
    expect(limit.concurrency).toBe(2);
    now += 300;
    limit.observe('overloaded');
    expect(limit.concurrency).toBe(1);
    now += 300;
    limit.observe('overloaded');
    expect(limit.concurrency).toBe(1);
  });

  it('holds one below the ceiling an overload found, and tries it again only after a while', () => {
    let now = 0;
    const limit = new AdaptiveLimit({ initial: 2, min: 1, max: 16 }, () => now);
    const answerRound = () => {
      for (let i = limit.concurrency; i > 0; i--) limit.observe('answered', 50);
      now += 50;
    };
    while (limit.concurrency < 9) answerRound();
    limit.observe('overloaded'); // the service takes 8
    expect(limit.concurrency).toBe(8);
    for (let r = 0; r < 100; r++) answerRound(); // 5 s of round trips: it holds at 8
    expect(limit.concurrency).toBe(8);
    now += PROBE_AFTER_MS;
    answerRound();
    expect(limit.concurrency).toBe(9);
    limit.observe('overloaded');
    expect(limit.concurrency).toBe(8);
  });

  it('neither grows nor shrinks on failures that say nothing about load', () => {
    const limit = new AdaptiveLimit({ ...bounds, initial: 4 }, () => 0);
    for (let i = 0; i < 10; i++) limit.observe('failed');
    expect(limit.concurrency).toBe(4);
  });

  it('never starts or grows past its maximum', () => {
    const limit = new AdaptiveLimit({ ...AUTO_LIMIT, max: 3 });
    expect(limit.concurrency).toBe(2);
    for (let i = 0; i < 50; i++) limit.observe('answered', 10);
    expect(limit.concurrency).toBe(3);
    expect(new AdaptiveLimit({ ...AUTO_LIMIT, max: 1 }).concurrency).toBe(1);
  });

  it('starts counting answers again after an overload', () => {
    let now = 0;
    const limit = new AdaptiveLimit({ ...bounds, initial: 4 }, () => now);
    limit.observe('answered');
    limit.observe('answered');
    limit.observe('answered');
    now = 5_000;
    limit.observe('overloaded');
    expect(limit.concurrency).toBe(3);
    for (let i = 0; i < 6; i++) limit.observe('answered');
    expect(limit.concurrency).toBe(3); // one below the ceiling of 4, held
    now += PROBE_AFTER_MS; // long enough to try the ceiling again: three answers in a row, counted afresh
    limit.observe('answered');
    limit.observe('answered');
    expect(limit.concurrency).toBe(3);
    limit.observe('answered');
    expect(limit.concurrency).toBe(4);
  });
});

describe('createRequestLimit and maxConcurrency', () => {
  it('make auto adaptive, between 2 and 16, and a number fixed', () => {
    expect(createRequestLimit('auto')).toBeInstanceOf(AdaptiveLimit);
    expect(createRequestLimit('auto').concurrency).toBe(2);
    expect(createRequestLimit(5).concurrency).toBe(5);
    expect(maxConcurrency('auto')).toBe(16);
    expect(maxConcurrency(5)).toBe(5);
  });
});
