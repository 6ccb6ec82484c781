import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { predictAllowance, readBounded } from '../../src/service/answer-bounds.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const bounds = { maxAnswerBytes: 64 * MiB, maxAnswerRatio: 64, answerFloorBytes: 1 * MiB, maxAnswerDepth: 64, maxDescribeBytes: 16 * MiB };

describe('predictAllowance', () => {
  it("is the answer's ratio to its request, at least the floor, at most the ceiling, naming the bound that sets it", () => {
    // A small batch: the floor, which only a higher ratio lifts.
    expect(predictAllowance(100, bounds)).toEqual({ bytes: 1 * MiB, bound: 'answerRatio' });
    expect(predictAllowance(16 * KiB, bounds)).toEqual({ bytes: 1 * MiB, bound: 'answerRatio' });
    expect(predictAllowance(100 * KiB, bounds)).toEqual({ bytes: 6400 * KiB, bound: 'answerRatio' });
    // A large one: the ceiling.
    expect(predictAllowance(1 * MiB, bounds)).toEqual({ bytes: 64 * MiB, bound: 'answerBytes' });
    expect(predictAllowance(10 * MiB, bounds)).toEqual({ bytes: 64 * MiB, bound: 'answerBytes' });
    // A ceiling below the floor wins.
    expect(predictAllowance(100, { ...bounds, maxAnswerBytes: 4 * KiB })).toEqual({ bytes: 4 * KiB, bound: 'answerBytes' });
  });
});

/** A stream of `chunks` chunks of `size` bytes of white space, made as they are read; `made` counts them. */
function spaces(chunks: number, size: number): { body: Readable; made: () => number } {
  let made = 0;
  const body = Readable.from(
    (function* () {
      for (; made < chunks; made++) yield Buffer.alloc(size, 0x20);
    })(),
    { objectMode: false, highWaterMark: size },
  );
  return { body, made: () => made };
}

describe('readBounded', () => {
  it('answers the bytes of a body within the allowance, joined', async () => {
    expect((await readBounded(spaces(4, 1000).body, 4000))?.length).toBe(4000);
    expect(await readBounded(Readable.from([Buffer.from('[1,'), Buffer.from('2]')]), 5)).toEqual(Buffer.from('[1,2]'));
  });

  it('stops reading a body once it passes the allowance, and destroys it', async () => {
    // 1.5 GB, if it were all read.
    const { body, made } = spaces(24_000, 64 * KiB);
    expect(await readBounded(body, 1 * MiB)).toBeUndefined();
    expect(body.destroyed).toBe(true);
    expect(made()).toBeLessThan(24);
  });

  it('refuses a body at once when the length it declares passes the allowance', async () => {
    const { body, made } = spaces(100, 1000);
    expect(await readBounded(body, 10_000, 100_000)).toBeUndefined();
    expect(body.destroyed).toBe(true);
    expect(made()).toBe(0);
  });
});
