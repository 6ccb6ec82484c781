import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AnswerBuffers, predictAllowance, readBounded } from '../../src/service/answer-bounds.js';

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

describe('AnswerBuffers', () => {
  it('joins answers into buffers given back, one at a time, and keeps no more than asked', async () => {
    const buffers = new AnswerBuffers(1);
    const first = await readBounded(Readable.from([Buffer.from('[1,'), Buffer.from('2]')]), 100, undefined, buffers);
    expect(first).toEqual(Buffer.from('[1,2]'));
    buffers.give(first!);
    // The next answer that fits is joined into the same memory; the first's view is not read any more.
    const second = await readBounded(Readable.from([Buffer.from('[3,'), Buffer.from('4]')]), 100, undefined, buffers);
    expect(second).toEqual(Buffer.from('[3,4]'));
    expect(second!.buffer).toBe(first!.buffer);
    // Taken while the second is still out: a buffer of its own.
    const third = buffers.take(5);
    expect(third.buffer).not.toBe(second!.buffer);
    buffers.give(second!);
    buffers.give(third);
    // One kept: the next take reuses the second's, and giving it twice keeps it once.
    buffers.give(second!);
    expect(buffers.take(5).buffer).toBe(second!.buffer);
    expect(buffers.take(5).buffer).not.toBe(second!.buffer);
  });

  it('leaves a buffer it did not make alone, and makes room for a larger answer', () => {
    const buffers = new AnswerBuffers(4);
    const foreign = Buffer.from('[1]');
    buffers.give(foreign);
    expect(buffers.take(3).buffer).not.toBe(foreign.buffer);
    const small = buffers.take(10);
    buffers.give(small);
    const large = buffers.take(200_000);
    expect(large.length).toBe(200_000);
    expect(large.buffer).not.toBe(small.buffer);
  });
});
