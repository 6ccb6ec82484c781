import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import type { RunEvent } from '../../src/lineage/run-event.js';
import { startForeignListener, type Answer, type ForeignListener } from './foreign-listener.js';
import { waitFor } from './queue.js';

/** The project's schema of the OpenLineage run events it sends, written from the spec's required fields. */
const validate = new Ajv({ allErrors: true }).compile(
  JSON.parse(readFileSync(new URL('../fixtures/openlineage-run-event.schema.json', import.meta.url), 'utf8')) as object,
);

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
    invalid: () => events().flatMap((e) => (valid(e) ? [] : [`${e.eventType}: ${explain(validate.errors)}`])),
    runEvents: (runId, count, ms = 30_000) => waitFor(`${count} lineage events of run ${runId}`, () => ofRun(runId).length >= count && ofRun(runId), ms),
    close: () => listener.close(),
  };
}

/** Whether an event is valid (validate.errors says why not), as a plain boolean: ajv's type guard would narrow a RunEvent to never. */
function valid(event: RunEvent): boolean {
  return validate(event);
}

function explain(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}
