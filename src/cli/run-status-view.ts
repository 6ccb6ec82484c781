import { ERROR_CATALOGUE, type ErrorCode } from '../errors.js';
import { describeTrigger, isResumable, resultNotes, resumeCanHelp, shownRate } from '../scoring/index.js';
import type { RunStatus } from '../queue/index.js';
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
