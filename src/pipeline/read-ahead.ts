/**
 * Batches read ahead of the writers, shared by the segments a process scores at once: a segment
 * takes a turn before it sends a batch and gives it back once the batch's rows are written. The
 * total follows the requests allowed in flight (`slots()`, which `--concurrency auto` moves), plus
 * two batches ready to go, so memory follows the concurrency and not the file. Shared rather than
 * split per segment, so that while one segment drains its last batches the others can keep every
 * request slot busy: split, each segment end left slots idle for a round trip.
 */
export class ReadAhead {
  private taken = 0;
  private waiting: (() => void)[] = [];

  /** @param slots the requests allowed in flight now */
  constructor(private readonly slots: () => number) {}

  /** Takes a turn when one is free; answers whether it did. */
  tryTake(): boolean {
    if (this.taken >= 2 * this.slots() + 2) return false;
    this.taken++;
    return true;
  }

  /** Gives a turn back, waking whoever waits for one. */
  release(): void {
    this.taken--;
    for (const wake of this.waiting.splice(0)) wake();
  }

  /** Settles at the next release (a turn may be free then; take it with tryTake). */
  released(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}
