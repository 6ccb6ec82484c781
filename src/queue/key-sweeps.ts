import type { Logger } from '../log.js';
import type { RunKeys } from './run-keys.js';

/** How often one worker sweeps at most (see RunKeys.sweep). */
const SWEEP_EVERY_MS = 5_000;

/**
 * When a worker sweeps the keys of runs whose jobs are gone: after a run job it finished (BullMQ
 * removes the jobs past their retention as it moves one to completed or failed), at most once per
 * `everyMs`, the last run's end always followed by one. So a run's keys leave Redis within
 * seconds of its job, and a busy fleet sweeps no more often than that per worker.
 */
export class KeySweeps {
  private timer?: NodeJS.Timeout;
  private lastAt = Number.NEGATIVE_INFINITY;
  private sweeping?: Promise<void>;
  private closed = false;

  constructor(
    private readonly keys: RunKeys,
    private readonly log: Logger,
    private readonly everyMs = SWEEP_EVERY_MS,
  ) {}

  /** A run job ended: sweeps now if the last sweep is old enough, else once it is (one sweep for every end meanwhile). */
  jobEnded(): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.lastAt = Date.now();
        this.sweeping = this.sweep().finally(() => (this.sweeping = undefined));
      },
      Math.max(0, this.lastAt + this.everyMs - Date.now()),
    );
    // A worker shutting down does not wait for it: the next worker's sweep finds what this one left.
    this.timer.unref();
  }

  /** Sweeps no more; waits for a sweep under way. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.sweeping;
  }

  private async sweep(): Promise<void> {
    try {
      const runs = await this.keys.sweep();
      if (runs > 0) this.log.debug({ runs }, 'deleted the Redis keys of runs whose jobs are gone');
    } catch (err) {
      // Redis away, or a shutdown under way: the next run's end sweeps again.
      this.log.warn({ err }, 'could not sweep the Redis keys of runs whose jobs are gone');
    }
  }
}
