import type { RunEvent } from '../../src/lineage/run-event.js';
import { startForeignListener, type Answer, type ForeignListener } from './foreign-listener.js';
import { eventProblems } from './lineage-schema.js';
import { waitFor } from './queue.js';

/** A local lineage server (a real HTTP server): it keeps every event POSTed to it, each checked against the schema. */
export interface LineageReceiver {
  /** What OPENLINEAGE_URL names: its base URL. */
  url: string;
  listener: ForeignListener;
  /** The events received, in order of arrival (a retried one as often as it came). */
  events(): RunEvent[];
  /** Each event that is not valid, with what is wrong with it. */
  invalid(): string[];
  /** The events of one batch-scorer run (its `batchScorer` run facet), once `count` of them have come. */
  runEvents(runId: string, count: number, ms?: number): Promise<RunEvent[]>;
  close(): Promise<void>;
}

/** Starts a LineageReceiver; it answers 200 unless `answer` says otherwise. */
export async function startLineageReceiver(answer: Answer = () => 200): Promise<LineageReceiver> {
  const listener = await startForeignListener(answer);
  const events = () => listener.requests.map((r) => JSON.parse(r.body) as RunEvent);
  const ofRun = (runId: string) => events().filter((e) => e.run.facets.batchScorer?.runId === runId);
  return {
    url: listener.url,
    listener,
    events,
    invalid: () =>
      events().flatMap((e) => {
        const problems = eventProblems(e);
        return problems === undefined ? [] : [`${e.eventType}: ${problems}`];
      }),
    runEvents: (runId, count, ms = 30_000) => waitFor(`${count} lineage events of run ${runId}`, () => ofRun(runId).length >= count && ofRun(runId), ms),
    close: () => listener.close(),
  };
}
