/**
 * Batches read ahead of the writers, shared by the segments a process scores at once: a segment
 * takes a turn before it sends a batch and gives it back once the batch's rows are written. The
 * total follows the requests allowed in flight (`slots()`, which `--concurrency auto` moves): a
 * batch per slot and one ready to go, so memory follows the concurrency and not the file. Shared
 * rather than split per segment, so that while one segment drains its last batches the others can
 * keep every request slot busy: split, each segment end left slots idle for a round trip.
 */
export class ReadAhead {
  private taken = 0;
  private waiting: (() => void)[] = [];

  /**
   * @param slots the requests allowed in flight now
   * @param batchSize rows per batch (--batch-size): small batches get up to one spare per slot,
   *   within SPARE_ROWS rows, since an answer that comes late holds up the writing of the batches
   *   behind it and the spares keep the slots busy meanwhile
   */
  constructor(
    private readonly slots: () => number,
    private readonly batchSize: number,
  ) {}

  /** Takes a turn when one is free; answers whether it did. */
  tryTake(): boolean {
    const slots = this.slots();
    if (this.taken >= slots + READY + Math.min(slots, Math.floor(SPARE_ROWS / this.batchSize))) return false;
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

/**
 * Batches ready to go beyond a batch per slot: one keeps a slot that frees from waiting for a batch
 * to be read. A second held more rows in flight for nothing: the same latency-bound rates (constant
 * and jittered answers alike), and its rows outlived more young collections, ~3% more CPU on a
 * CPU-bound run (Node 24.21, 6 of 6 alternating pairs).
 */
const READY = 1;

/** Rows that spare batches may hold, beyond a batch per slot and one ready (see ReadAhead). */
const SPARE_ROWS = 2_000;
