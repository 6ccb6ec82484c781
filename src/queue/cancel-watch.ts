import type { Logger } from '../log.js';
import { cancelledError, type RunCancels } from './run-cancel.js';

/** How often a worker asks whether the runs it works on were cancelled: their jobs stop within about this long. */
export const CANCEL_POLL_MS = 500;

/** A job's view of its run's cancellation; `release()` when the job ends. */
export interface CancelFollow {
  /** Aborted, with E_CANCELLED as reason, once the run is cancelled. */
  signal: AbortSignal;
  release: () => void;
}

/**
 * Stops a worker's jobs of a cancelled run, on every machine: while this process holds jobs of
 * some runs, it asks Redis for their cancel markers every CANCEL_POLL_MS (one MGET for them all)
 * and aborts the signal of each cancelled run. Idle, it asks nothing. A marker asked for, not a
 * message listened to, so nothing is missed while Redis restarts; one question at a time, so
 * they do not pile up while it is away.
 */
export class CancelWatch {
  private readonly runs = new Map<string, { controller: AbortController; holders: number }>();
  private timer?: NodeJS.Timeout;
  private asking = false;

  constructor(
    private readonly cancels: RunCancels,
    private readonly log: Logger,
  ) {}

  follow(runId: string): CancelFollow {
    let entry = this.runs.get(runId);
    // A run resumed after a cancel gets a signal of its own, not the aborted one of its jobs still stopping.
    if (!entry || entry.controller.signal.aborted) {
      entry = { controller: new AbortController(), holders: 0 };
      this.runs.set(runId, entry);
    }
    const held = entry;
    held.holders++;
    this.timer ??= setInterval(() => void this.ask(), CANCEL_POLL_MS).unref();
    let released = false;
    return {
      signal: held.controller.signal,
      release: () => {
        if (released) return;
        released = true;
        if (--held.holders === 0 && this.runs.get(runId) === held) this.runs.delete(runId);
        if (this.runs.size === 0) this.stop();
      },
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async ask(): Promise<void> {
    if (this.asking) return;
    this.asking = true;
    try {
      for (const runId of await this.cancels.which([...this.runs.keys()])) {
        const entry = this.runs.get(runId);
        if (entry && !entry.controller.signal.aborted) {
          this.log.info({ runId }, 'run cancelled: stopping its jobs');
          entry.controller.abort(cancelledError(runId));
        }
      }
    } catch (err) {
      // Redis away: the next tick asks again.
      this.log.debug({ err }, 'could not ask for cancelled runs');
    } finally {
      this.asking = false;
    }
  }
}
