import type { Processor, Worker } from 'bullmq';
import type { Logger } from '../log.js';

/**
 * How a worker process takes segment jobs: one at a time while a segment it holds still sends
 * batches, and a next one (up to `most` held) only once every segment it holds has sent all of
 * its batches and only waits for answers. A worker that took two segments at once would score
 * both at half speed, and at the end of a run hold the last two while other workers idle; taking
 * the next one while the last drains keeps a lone worker's request slots busy across segment ends.
 *
 * It steers BullMQ's own fetching, so locks, stalled jobs and shutdown stay BullMQ's: the
 * worker's `concurrency` is 1 while a segment sends and `most` while all drain. BullMQ's main
 * loop reads a raised concurrency only at its next turn, which, with a job held, is that job's
 * end: pausing without waiting and resuming wakes it (see Worker.resume).
 */
export class SegmentIntake {
  /** Jobs held whose segment may still send batches: from the processor's start to sent(). */
  private readonly sending = new Set<string>();
  private held = 0;
  private worker: Worker | undefined;

  /**
   * @param most segments held at once at most (the worker's `--segments`)
   * @param log where each take and each segment's last batch sent are told (debug)
   */
  constructor(
    private readonly most: number,
    private readonly log: Logger,
  ) {}

  /** The segments worker this steers; create it with concurrency 1. */
  steer(worker: Worker): void {
    this.worker = worker;
    this.apply();
  }

  /** The segments worker's processor: a job is held from its start to its end, and sending until sent(). */
  around<D>(processor: Processor<D, unknown>): Processor<D, unknown> {
    return async (job, token, signal) => {
      const id = job.id!;
      this.log.debug({ jobId: id, held: this.held, sending: this.sending.size }, 'segment taken');
      this.held++;
      this.sending.add(id);
      this.apply();
      try {
        return await processor(job, token, signal);
      } finally {
        this.held--;
        this.sending.delete(id);
        this.apply();
      }
    };
  }

  /** Job `id` has sent all its batches: what is left of it is answers and writes. */
  sent(id: string): void {
    if (!this.sending.delete(id)) return;
    this.log.debug({ jobId: id }, 'segment sent');
    this.apply();
  }

  private apply(): void {
    const worker = this.worker;
    if (!worker) return;
    const before = worker.concurrency;
    worker.concurrency = this.held > 0 && this.sending.size === 0 ? this.most : 1;
    if (worker.concurrency > before && !worker.closing && !worker.isPaused()) {
      worker
        .pause(true)
        .then(() => worker.resume())
        .catch((err: unknown) => worker.emit('error', err as Error));
    }
  }
}
