/**
 * The indexes of a run's segments as they can be scored, in order: planning hands on each segment
 * once its end is found, so the first requests go out while the rest of the input is planned. One
 * reader; the feed ends when planning does, or throws planning's error.
 */
export class SegmentFeed implements AsyncIterable<number> {
  private released = 0;
  private ended = false;
  private failure: { err: unknown } | undefined;
  private wake: (() => void) | undefined;

  /** The first `count` segments can be scored. */
  release(count: number): void {
    this.released = Math.max(this.released, count);
    this.notify();
  }

  /** Planning ended with `count` segments in all. */
  end(count: number): void {
    this.ended = true;
    this.release(count);
  }

  /** Planning failed: the reader throws `err` at its next step, taking no more segments. */
  fail(err: unknown): void {
    this.failure ??= { err };
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<number> {
    for (let next = 0; ;) {
      if (this.failure) throw this.failure.err;
      if (next < this.released) yield next++;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
