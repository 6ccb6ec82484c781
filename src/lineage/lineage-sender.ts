import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log.js';
import type { LineageSettings } from '../config/index.js';
import type { RunEvent } from './run-event.js';

/** How long one POST may take before it is given up and tried again. */
const ATTEMPT_TIMEOUT_MS = 5_000;
/** The waits before the second and third tries; a third failure drops the event. */
const BACKOFF_MS = [500, 2_000];
/** Events waiting or in flight at most: past it (a server down under many runs) new ones are dropped, so memory stays bounded. */
export const MAX_PENDING = 1_000;

/**
 * Sends run events to the lineage server in the background: each POST with a timeout, tried
 * again after a pause on a network failure, a timeout, a 429 or a 5xx, and dropped with a warning
 * after the last try or on any other answer (a redirect too: it is never followed). A run's events go one after the other (its START
 * before its end); runs do not wait for each other. `send` never throws and never waits.
 */
export class LineageSender {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly pending = new Set<Promise<void>>();
  /** Aborted by `drain` once its time is up: what is still in flight or waiting to be tried again stops. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly settings: LineageSettings,
    private readonly log: Logger,
  ) {}

  send(event: RunEvent): void {
    if (this.pending.size >= MAX_PENDING || this.stopping.signal.aborted) {
      this.log.warn({ eventType: event.eventType, lineageRunId: event.run.runId }, 'lineage event dropped: too many waiting, or shutting down');
      return;
    }
    const key = event.run.runId;
    const sent = (this.chains.get(key) ?? Promise.resolve()).then(() => this.post(event));
    this.chains.set(key, sent);
    this.pending.add(sent);
    void sent.finally(() => {
      this.pending.delete(sent);
      if (this.chains.get(key) === sent) this.chains.delete(key);
    });
  }

  /** Waits for the events sent so far, `ms` at most; then stops what is left (it is dropped), so nothing holds the process open. */
  async drain(ms: number): Promise<void> {
    if (this.pending.size > 0) {
      const timer = new AbortController();
      await Promise.race([Promise.allSettled([...this.pending]), sleep(ms, undefined, { signal: timer.signal }).catch(() => undefined)]);
      timer.abort();
    }
    if (this.pending.size > 0) this.log.warn({ events: this.pending.size, waitedMs: ms }, 'lineage events still unsent at exit: dropped');
    this.stopping.abort();
  }

  /** One event, tried up to 1 + BACKOFF_MS.length times; never rejects. */
  private async post(event: RunEvent): Promise<void> {
    const body = JSON.stringify(event);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey}`;
    const about = {
      eventType: event.eventType,
      lineageRunId: event.run.runId,
      runId: event.run.facets.batchScorer?.runId,
      attempt: event.run.facets.batchScorer?.attempt,
    };
    for (let attempt = 0; ; attempt++) {
      let err: unknown;
      // Anything but overload, a server error or no answer would be answered the same again.
      let retriable = true;
      try {
        const signal = AbortSignal.any([AbortSignal.timeout(ATTEMPT_TIMEOUT_MS), this.stopping.signal]);
        // A redirect is not followed: events (and the API key) go only to OPENLINEAGE_URL, never to a host it points to.
        const res = await fetch(this.settings.endpoint, { method: 'POST', headers, body, signal, redirect: 'manual' });
        await res.body?.cancel();
        if (res.ok) return;
        const redirect = res.status >= 300 && res.status < 400 ? ' (a redirect, which is not followed)' : '';
        err = new Error(`the lineage server answered ${res.status}${redirect}`);
        retriable = res.status === 429 || res.status >= 500;
      } catch (caught) {
        err = caught;
      }
      if (!retriable || this.stopping.signal.aborted || attempt >= BACKOFF_MS.length) {
        this.log.warn({ err, ...about, attempts: attempt + 1 }, 'lineage event not delivered');
        return;
      }
      this.log.debug({ err, ...about, attempt: attempt + 1 }, 'lineage event not delivered yet: trying again');
      if (!(await sleep(BACKOFF_MS[attempt], true, { signal: this.stopping.signal }).catch(() => false))) return;
    }
  }
}
