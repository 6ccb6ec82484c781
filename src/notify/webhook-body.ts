import type { Manifest } from '../pipeline/manifest.js';
import { describeTrigger, triggerPipeline } from '../pipeline/run-trigger.js';
import { excerpt } from '../text-excerpt.js';
import { runEvents, type NotifyEvent } from './notify-events.js';

/** Bytes of a run's error message a delivery carries at most: a chat line, not a log. */
const MESSAGE_BYTES = 500;

/** What a receiver gets, as JSON: the run end, and a `text` line chat webhooks (Slack, Teams) show as it is. */
export interface WebhookBody {
  /** The end's state, as an event (`completed`, `failed`, `expired`, `cancelled`). */
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
  /** The error of a run that did not succeed, its message at most MESSAGE_BYTES. */
  error: { code: string; message: string } | null;
  drift: { level: string } | null;
  links: {
    /** The run page, when PUBLIC_URL says where `serve` is reached. */
    run: string | null;
    /** The run folder (`<out>/<runId>/`), where manifest.json is. */
    folder: string | null;
  };
  text: string;
}

/** The body of one delivery of a run end. */
export function webhookBody(manifest: Manifest, deliveryId: string, publicUrl: string | undefined): WebhookBody {
  const events = runEvents(manifest);
  const c = manifest.counts;
  const error = manifest.error ? { code: manifest.error.code, message: excerpt(manifest.error.message, MESSAGE_BYTES) } : null;
  const body: Omit<WebhookBody, 'text'> = {
    event: events[0],
    events,
    deliveryId,
    runId: manifest.runId,
    state: manifest.state,
    pipeline: triggerPipeline(manifest.trigger ?? undefined) ?? null,
    trigger: describeTrigger(manifest.trigger ?? undefined),
    startedAt: manifest.startedAt,
    finishedAt: manifest.finishedAt,
    durationMs: manifest.durationMs,
    counts: c ? { rowsIn: c.rowsIn, rowsScored: c.rowsScored, rowsQuarantined: c.rowsQuarantined } : null,
    error,
    drift: manifest.drift ? { level: manifest.drift.level } : null,
    links: { run: publicUrl ? `${publicUrl}/ui/runs/${encodeURIComponent(manifest.runId)}` : null, folder: manifest.folder },
  };
  return { ...body, text: chatText(body) };
}

/**
 * One line a person reads in a chat channel, and a second with the link: `batch-scorer: run
 * nightly-20261126T0200Z (pipeline nightly) failed [E_INPUT_NOT_FOUND]: ...`.
 */
function chatText(b: Omit<WebhookBody, 'text'>): string {
  const who = `run ${b.runId}${b.pipeline ? ` (pipeline ${b.pipeline})` : ''}`;
  const what = b.state === 'succeeded' ? 'completed' : b.state;
  const counts = b.counts ? `: ${b.counts.rowsScored} rows scored, ${b.counts.rowsQuarantined} quarantined` : '';
  const error = b.error ? ` [${b.error.code}]: ${excerpt(b.error.message, 200)}` : counts;
  const drift = b.drift && b.drift.level !== 'ok' ? `; drift ${b.drift.level}` : '';
  const link = b.links.run ?? b.links.folder;
  return `batch-scorer: ${who} ${what}${error}${drift}${link ? `\n${link}` : ''}`;
}
