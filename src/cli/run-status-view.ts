import { ERROR_CATALOGUE, type ErrorCode } from '../errors.js';
import { resumeCanHelp } from '../pipeline/resume-advice.js';
import { describeTrigger } from '../pipeline/run-trigger.js';
import { readFailedAttempt, type FailedAttempt } from '../queue/failed-attempt.js';
import type { RunStatus } from '../queue/producer.js';
import { failureCode } from '../queue/to-queue-error.js';
import { enqueueCommand } from './resume-command.js';

/**
 * One line of a run for `status`: state, rows done/total, rows/s, ETA, its priority unless
 * `normal`, what started it (and its pipeline, if one did), output location, failures.
 */
export function formatRunStatus(s: RunStatus): string {
  const p = s.progress;
  const rows = p ? `${p.rowsDone}/${p.rowsTotal} rows` : '-';
  const rate = p ? `${p.rowsPerSecond} rows/s` : '';
  const eta = p && s.state === 'active' ? `ETA ${p.etaSeconds ?? '?'}s` : '';
  const segments = p ? `segments ${p.segmentsDone}/${p.segmentsTotal}` : '';
  const quarantined = p?.rowsQuarantined ? `${p.rowsQuarantined} quarantined` : '';
  // An expired run's reason says so itself (`run <id> expired: ...`).
  const failed = s.failedReason ? (s.state === 'expired' ? s.failedReason : `failed: ${s.failedReason}`) : '';
  const priority = s.priority === 'normal' ? '' : `priority ${s.priority}`;
  const line = [
    s.runId,
    s.state,
    rows,
    segments,
    rate,
    eta,
    quarantined,
    priority,
    `attempts ${s.attempts}`,
    `by ${describeTrigger(s.trigger)}`,
    s.folder,
    failed,
  ]
    .filter(Boolean)
    .join('  ');
  // An expired run is resumed by `resume`, whose caps are its own: enqueueing it again as asked would meet its caps again.
  if (s.state === 'expired') return `${line}\n  resume: batch-scorer resume ${s.runId} (with a higher --max-requests, --max-rows or --deadline, or none)`;
  return resumable(s) ? `${line}\n  resume: ${enqueueCommand(s)}` : line;
}

/**
 * A cancelled run, or a failed one that enqueueing again can take further (see resumeCanHelp: its
 * code, and whether it was planned, which its progress shows); a failure without a code (a job
 * that stalled past its limit) is a crash, which a resume goes on from.
 */
export function resumable(s: RunStatus): boolean {
  if (s.state === 'cancelled' || s.state === 'expired') return true;
  if (s.state !== 'failed') return false;
  const code = failureCode(s.failedReason);
  if (code === undefined || !(code in ERROR_CATALOGUE)) return true;
  return resumeCanHelp(code as ErrorCode, s.progress !== undefined);
}

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
