// Kept apart from run-status-view.ts: reading a failed attempt's log line needs queue/'s door,
// which loads BullMQ, so the commands load this with the queue, when they run, not when they are
// registered (`status --help` loads no Redis).
import { type FailedAttempt, readFailedAttempt } from '../queue/index.js';

/**
 * The lines a run's job logged, as a command prints them: its failed attempts always, in words
 * (formatFailedAttempt) or as `{"runId", "failedAttempt"}`; its milestones (planned, segments
 * done, assembled) with `milestones` only, as they are or as `{"runId", "log"}`.
 */
export function shownLogs(runId: string, logs: readonly string[], options: { json: boolean; milestones: boolean }): string[] {
  return logs.flatMap((log) => {
    const failedAttempt = readFailedAttempt(log);
    if (failedAttempt) return [options.json ? JSON.stringify({ runId, failedAttempt }) : formatFailedAttempt(runId, failedAttempt)];
    if (!options.milestones) return [];
    return [options.json ? JSON.stringify({ runId, log }) : log];
  });
}

/**
 * A failed attempt for people, on one line: `run <id>: attempt 1 of 5 failed: <reason> [<code>];
 * next try in 5 s (at <time>)`, or `; it was the last`.
 */
export function formatFailedAttempt(runId: string, a: FailedAttempt, now = Date.now()): string {
  const retryIn = a.retryAt === null ? undefined : Math.round((Date.parse(a.retryAt) - now) / 1000);
  const retryAt = a.retryAt?.replace(/\.\d+Z$/, 'Z');
  const next = retryIn === undefined ? 'it was the last' : retryIn > 0 ? `next try in ${retryIn} s (at ${retryAt})` : `next try at ${retryAt}`;
  return `run ${runId}: attempt ${a.attempt} of ${a.attempts} failed: ${a.reason} [${a.code}]; ${next}`;
}
