import { excerpt } from '../text-excerpt.js';
import { runEvents, type NotifyEvent } from './notify-events.js';
import type { RunEnd } from './run-end.js';
import { describeResult, type RunResult } from '../scoring/index.js';

/** What a receiver gets, as JSON: the run end, and a `text` line chat webhooks (Slack, Teams) show as it is. */
export interface WebhookBody {
  /** The end's state, as an event (`succeeded`, `failed`, `expired`, `cancelled`, `held`). */
  event: NotifyEvent;
  /** `event`, and `drift` when the run's predictions drifted (warn or fail). */
  events: NotifyEvent[];
  /** The same on every attempt of this delivery (and in the X-Batch-Scorer-Delivery header). */
  deliveryId: string;
  runId: string;
  state: string;
  /** The pipeline that started the run, null for runs started by a person or script. */
  pipeline: string | null;
  trigger: string;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  counts: { rowsIn: number; rowsScored: number; rowsQuarantined: number } | null;
  /** The error of a run that did not succeed, its message at most 500 bytes (see runEndSchema). */
  error: { code: string; message: string } | null;
  drift: { level: string } | null;
  /** What the run came to (see RunResult): counts, drift verdict (worst column and PSI), shadow agreement, cap reached, acceptance. */
  result: RunResult;
  links: {
    /** The run page, when PUBLIC_URL says where `serve` is reached. */
    run: string | null;
    /** The run folder (`<out>/<runId>/`), where manifest.json is. */
    folder: string | null;
  };
  text: string;
}

/** The body of one delivery of a run end (see runEndOf): its facts, and what follows from them and the deployment's PUBLIC_URL. */
export function webhookBody(end: RunEnd, deliveryId: string, publicUrl: string | undefined): WebhookBody {
  const events = runEvents(end);
  const { runId, state, pipeline, trigger, startedAt, finishedAt, durationMs, counts, error, drift, result, folder } = end;
  const body: Omit<WebhookBody, 'text'> = {
    event: events[0],
    events,
    deliveryId,
    runId,
    state,
    pipeline,
    trigger,
    startedAt,
    finishedAt,
    durationMs,
    counts,
    error,
    drift,
    result,
    links: { run: publicUrl ? `${publicUrl}/ui/runs/${encodeURIComponent(runId)}` : null, folder },
  };
  return { ...body, text: chatText(body) };
}

/**
 * One line a person reads in a chat channel, and a second with the link: `batch-scorer: run
 * nightly-20261126T0200Z (pipeline nightly) held: 1000 rows scored, 2 quarantined; [E_DRIFT];
 * drift fail (price PSI 0.412 from run r-1) the run drifted...` (see describeResult), the error's message last.
 */
function chatText(b: Omit<WebhookBody, 'text'>): string {
  const who = `run ${b.runId}${b.pipeline ? ` (pipeline ${b.pipeline})` : ''}`;
  const error = b.error && b.state !== 'succeeded' ? ` ${excerpt(b.error.message, 200)}` : '';
  const link = b.links.run ?? b.links.folder;
  return `batch-scorer: ${who} ${describeResult(b.result)}${error}${link ? `\n${link}` : ''}`;
}
