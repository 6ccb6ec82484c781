import type { Logger } from '../log.js';
import { type ErrorAllowance, PROGRESS_EVERY_MS } from '../scoring/index.js';
import type { RunProgressStore } from './run-progress.js';

/**
 * A run's error allowance on Redis, as one segment job sees it: the segment's quarantined rows go
 * into the run's progress hash, where a script sums every segment's and compares the sum with
 * the allowance in one step (see RunProgressStore.quarantined), so the segments on every worker
 * share one allowance. Once the run has been past it, a mark stays in the hash: segments still
 * scoring stop, segments not started are skipped, and the run job, taken once none is left,
 * fails the run.
 *
 * Scoring never waits for Redis: a report sends the segment's count unless a question is out,
 * and the answer is what the next report returns, so a segment stops a round trip after the run
 * went past. One question at a time, each with the latest count: a run of many malformed rows
 * (each one a report) asks no more often than Redis answers. A segment whose count did not grow
 * asks once every PROGRESS_EVERY_MS at most, to learn of its siblings' rows.
 */
export class RunErrorAllowance implements ErrorAllowance {
  private latest = 0;
  private stored: number | undefined;
  private askedAt = Number.NEGATIVE_INFINITY;
  private over = false;
  private asking = false;

  constructor(
    private readonly progress: RunProgressStore,
    private readonly runId: string,
    readonly allowed: number,
    private readonly log: Logger,
  ) {}

  /** The segment's quarantined rows, as last reported. */
  get quarantined(): number {
    return this.latest;
  }

  report(index: number, rows: number): boolean {
    this.latest = rows;
    if (!this.over && !this.asking && (rows !== this.stored || Date.now() - this.askedAt >= PROGRESS_EVERY_MS)) void this.ask(index);
    return this.over;
  }

  /** Tells Redis the segment's count until it has the latest, and learns whether the run is past its allowance. */
  private async ask(index: number): Promise<void> {
    this.asking = true;
    try {
      do {
        const rows = this.latest;
        this.askedAt = Date.now();
        this.over = await this.progress.quarantined(this.runId, index, rows, this.allowed);
        this.stored = rows;
      } while (!this.over && this.stored !== this.latest);
    } catch (err) {
      // Redis away: the next report asks again.
      this.log.debug({ err }, 'could not report the quarantined rows');
    } finally {
      this.asking = false;
    }
  }
}
