import { describe, expect, it } from 'vitest';
import { SegmentFeed } from '../../src/scoring/segment-feed.js';

/** The indexes a feed hands out, and how it ended. */
async function take(feed: SegmentFeed, taken: number[]): Promise<unknown> {
  try {
    for await (const index of feed) taken.push(index);
    return 'ended';
  } catch (err) {
    return err;
  }
}

describe('the segments of a run as planning finds them', () => {
  it('hands out each segment once, in order, as it is released, and ends with planning', async () => {
    const feed = new SegmentFeed();
    const taken: number[] = [];
    const reading = take(feed, taken);
    feed.release(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(taken).toEqual([0, 1]);
    feed.release(1); // A count already released releases nothing again.
    feed.end(4);
    expect(await reading).toBe('ended');
    expect(taken).toEqual([0, 1, 2, 3]);
  });

  it("throws planning's error, taking no segment after it", async () => {
    const feed = new SegmentFeed();
    const taken: number[] = [];
    feed.release(1);
    const failure = new Error('the input changed');
    const reading = take(feed, taken);
    await new Promise((resolve) => setImmediate(resolve));
    feed.release(3);
    feed.fail(failure);
    expect(await reading).toBe(failure);
    expect(taken).toEqual([0]);
  });
});
