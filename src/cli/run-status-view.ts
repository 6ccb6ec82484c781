import { ERROR_CATALOGUE, type ErrorCode } from '../errors.js';
import { describeTrigger, isResumable, resultNotes, resumeCanHelp, shownRate } from '../scoring/index.js';
import { type FailedAttempt, readFailedAttempt, type RunStatus } from '../queue/index.js';
import { shellWord } from '../shell-word.js';
import { enqueueCommand } from './resume-command.js';

/**
 * One line of a run for `status`: state, rows done/total, rows/s, ETA, quarantined rows, its
 * priority unless `normal`, what started it (and its pipeline, if one did), output location; for
 * a settled run what its result notes (the cap reached, the drift verdict, shadow agreement, who
 * accepted it, see resultNotes) and its error; then, on a line of its own, the command that takes
 * it further where one does.
 */
export function formatRunStatus(s: RunStatus): string {
  const p = s.progress;
  // An expired run's rows are those its segments keep, as its cap says (its progress may have counted rows a stopped batch lost).
  const cap = s.result?.cap;
  const rows = cap ? `${cap.rowsKept}/${cap.rowsTotal} rows kept` : p ? `${p.rowsDone}/${p.rowsTotal} rows` : '-';
  const rateShown = shownRate(s);
  const rate = rateShown === undefined ? '' : `${rateShown} rows/s`;
  const eta = p && s.state === 'running' ? `ETA ${p.etaSeconds ?? '?'}s` : '';
  const segments = p ? `segments ${p.segmentsDone}/${p.segmentsTotal}` : '';
  const quarantinedRows = s.result?.counts?.rowsQuarantined ?? p?.rowsQuarantined;
  const quarantined = quarantinedRows ? `${quarantinedRows} quarantined` : '';
  const priority = s.priority === 'normal' ? '' : `priority ${s.priority}`;
  // An expired run's cap is in its rows (kept) and its error: its notes without it.
  const notes = s.result ? resultNotes(s.result) : [];
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
    ...notes,
    errorText(s),
  ]
    .filter(Boolean)
    .join('  ');
  const next = nextCommand(s);
  return next ? `${line}\n  ${next}` : line;
}

/**
 * The error a settled run ended with, as `<message> [<code>]`: after `failed:` or `held:`, alone
 * for an expired run (its message says it expired, and how far it got); none for a cancel, whose
 * message says only that. For a job that failed without a result (it stalled), BullMQ's reason.
 */
function errorText(s: RunStatus): string {
  const error = s.result?.error;
  if (!error) return s.failedReason ? `failed: ${s.failedReason}` : '';
  if (s.state === 'cancelled' || s.state === 'succeeded') return '';
  const text = `${error.message} [${error.code}]`;
  return s.state === 'expired' ? text : `${s.state}: ${text}`;
}

/** What takes a settled run further, ready to copy: a judgement for a held run, a resume for one a resume can help. */
function nextCommand(s: RunStatus): string | undefined {
  const out = shellWord(s.out);
  if (s.state === 'held') return `accept: batch-scorer accept ${s.runId} --out ${out} --why '<reason>'   reject: batch-scorer reject ${s.runId} --out ${out}`;
  // An expired run is resumed by `resume`, whose caps are its own: enqueueing it again as asked would meet its caps again.
  if (s.state === 'expired') return `resume: batch-scorer resume ${s.runId} (with a higher --max-requests, --max-rows or --deadline, or none)`;
  return resumable(s) ? `resume: ${enqueueCommand(s)}` : undefined;
}

/**
 * A cancelled run, or a failed one that enqueueing again can take further (see resumeCanHelp: its
 * result's code, and whether it was planned, which its progress shows); a failure without a result
 * (a job that stalled past its limit) is a crash, which a resume goes on from.
 */
export function resumable(s: RunStatus): boolean {
  if (!isResumable(s.state)) return false;
  if (s.state !== 'failed') return true;
  const code = s.result?.error?.code;
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
