import { type Manifest, NOT_THIS_RUNS, type RunStart, type RunTrigger, triggerPipeline } from '../scoring/index.js';
import { parseModelRef } from '../service/index.js';
import { formatLocation } from '../storage/index.js';
import { excerpt } from '../text-excerpt.js';
import { TOOL } from '../version.js';
import type { LineageSettings } from '../config/index.js';
import { datasetName } from './dataset-name.js';
import { facetSchemaUrl, type CustomFacet } from './facet-schemas.js';
import { lineageRunId, wholeRunId } from './run-uuid.js';

/** Who sends the events and their facets: this tool at its version (it has no home page to name). */
export const PRODUCER = `urn:${TOOL.name}:${TOOL.version}`;

const SPEC = 'https://openlineage.io/spec';
/** The spec version the events follow, and the versions of the standard facets they carry. */
const SCHEMAS = {
  runEvent: `${SPEC}/2-0-2/OpenLineage.json#/$defs/RunEvent`,
  jobType: `${SPEC}/facets/2-0-3/JobTypeJobFacet.json#/$defs/JobTypeJobFacet`,
  nominalTime: `${SPEC}/facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet`,
  errorMessage: `${SPEC}/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet`,
  inputStatistics: `${SPEC}/facets/1-0-0/InputStatisticsInputDatasetFacet.json#/$defs/InputStatisticsInputDatasetFacet`,
  outputStatistics: `${SPEC}/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet`,
  parent: `${SPEC}/facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet`,
};

type Facet = { _producer: string; _schemaURL: string } & Record<string, unknown>;
type Facets = Record<string, Facet>;

/** START, an end (COMPLETE, FAIL, ABORT), or OTHER: an attempt held by its drift gate, whose end comes when it is judged. */
export type RunEventType = 'START' | 'COMPLETE' | 'FAIL' | 'ABORT' | 'OTHER';

/** What events are made with: the jobs' namespace, and where `serve` is reached (the custom facets' schemas are there). */
export type EventSettings = Pick<LineageSettings, 'namespace' | 'publicUrl'>;

/** An OpenLineage run event, as this tool sends them. */
export interface RunEvent {
  eventType: RunEventType;
  eventTime: string;
  producer: string;
  schemaURL: string;
  run: { runId: string; facets: Facets };
  job: { namespace: string; name: string; facets: Facets };
  inputs: { namespace: string; name: string; inputFacets?: Facets }[];
  outputs: { namespace: string; name: string; outputFacets?: Facets }[];
}

/** START: the attempt has claimed its folder. Its input is named when it is one file; a folder's or a glob's files are named at the end. */
export function startEvent(start: RunStart, settings: EventSettings): RunEvent {
  const folder = formatLocation(start.folder);
  const trigger = start.request.trigger;
  const input = datasetName(start.request.input, start.request.options.table);
  const job = jobOf(settings, trigger, { requested: start.request.model });
  return {
    ...envelope('START', start.startedAt),
    run: { runId: lineageRunId(folder, start.attempt), facets: runFacets({ runId: start.runId, folder, attempt: start.attempt, trigger }, job, settings) },
    job,
    inputs: input ? [input] : [],
    outputs: [],
  };
}

/**
 * The attempt's end: COMPLETE (succeeded), FAIL (failed) or ABORT (cancelled, or stopped by a
 * cap: resumable, neither done nor broken); OTHER for an attempt held by its drift gate, which
 * ends when it is judged: accepted, COMPLETE, rejected, FAIL, on the same OpenLineage run, at the
 * judgement's time. It names every input file and every file the run folder holds that the
 * manifest lists (errors.jsonl of a run failed on its error threshold too), with their rows and
 * bytes. Undefined for a run that never had a folder of its own (one found to be another run's:
 * its UUID would be that run's), or that never began an attempt (attempt 0).
 */
export function endEvent(manifest: Manifest, settings: EventSettings): RunEvent | undefined {
  const { folder, error } = manifest;
  if (folder === null || (error && (NOT_THIS_RUNS as readonly string[]).includes(error.code))) return undefined;
  // Attempt 0: a queued run its worker refused before it began an attempt, which sent no START.
  const attempt = manifest.attempt ?? 1;
  if (attempt === 0) return undefined;
  const trigger = manifest.trigger ?? undefined;
  const eventType = END_EVENTS[manifest.state];
  const job = jobOf(settings, trigger, manifest.model);
  // The error is told with the end it made: a held attempt's drift, with its judgement (a rejection).
  const failing = eventType === 'FAIL' || eventType === 'ABORT';
  return {
    ...envelope(eventType, manifest.accepted?.at ?? manifest.rejected?.at ?? manifest.finishedAt),
    run: {
      runId: lineageRunId(folder, attempt),
      facets: {
        ...runFacets({ runId: manifest.runId, folder, attempt, trigger, state: manifest.state }, job, settings),
        ...(failing &&
          error && { errorMessage: facet(SCHEMAS.errorMessage, { message: `${error.code}: ${error.message}`, programmingLanguage: 'JavaScript' }) }),
      },
    },
    job,
    inputs: inputDatasets(manifest),
    outputs: manifest.outputs.flatMap((file) => {
      const dataset = datasetName(file.location);
      return dataset
        ? [{ ...dataset, outputFacets: { outputStatistics: facet(SCHEMAS.outputStatistics, { rowCount: file.rows, size: file.bytes, fileCount: 1 }) } }]
        : [];
    }),
  };
}

/** The event an attempt's end is, by the state its manifest records. */
const END_EVENTS: Record<Manifest['state'], RunEventType> = { succeeded: 'COMPLETE', failed: 'FAIL', cancelled: 'ABORT', expired: 'ABORT', held: 'OTHER' };

/** Every input file the manifest lists (the input as named, for a run that failed before it listed them), with its rows and bytes where known. */
function inputDatasets(manifest: Manifest): RunEvent['inputs'] {
  const files = manifest.inputs.length > 0 ? manifest.inputs : [manifest.input];
  return files.flatMap((file) => {
    const dataset = datasetName(file.location, manifest.database?.table ?? undefined);
    if (!dataset) return [];
    const stats = { ...(file.rows !== null && { rowCount: file.rows }), ...(file.size !== null && { size: file.size }) };
    return [
      { ...dataset, ...(Object.keys(stats).length > 0 && { inputFacets: { inputStatistics: facet(SCHEMAS.inputStatistics, { ...stats, fileCount: 1 }) } }) },
    ];
  });
}

function envelope(eventType: RunEventType, eventTime: string) {
  return { eventType, eventTime, producer: PRODUCER, schemaURL: SCHEMAS.runEvent };
}

function facet(schemaURL: string, fields: Record<string, unknown>): Facet {
  return { _producer: PRODUCER, _schemaURL: schemaURL, ...fields };
}

/** One attempt of a batch-scorer run, as its run facet tells it. */
interface AttemptFacts {
  runId: string;
  folder: string;
  attempt: number;
  trigger: RunTrigger | undefined;
  /** How it ended; absent at its start. */
  state?: Manifest['state'];
}

/**
 * This tool's run facet (its run id, attempt and folder, what started it, and at the end its
 * state); the run as a whole as the attempt's parent, of the same job, so that a lineage server
 * groups its attempts; and a scheduled run's nominal time.
 */
function runFacets(facts: AttemptFacts, job: RunEvent['job'], settings: EventSettings): Facets {
  const { trigger, state } = facts;
  return {
    batchScorer: facet(customSchema('batchScorer', settings), {
      runId: facts.runId,
      attempt: facts.attempt,
      folder: facts.folder,
      trigger: trigger?.kind ?? null,
      ...(triggerPipeline(trigger) !== undefined && { pipeline: triggerPipeline(trigger) }),
      ...(state !== undefined && { state }),
    }),
    parent: facet(SCHEMAS.parent, { run: { runId: wholeRunId(facts.folder) }, job: { namespace: job.namespace, name: job.name } }),
    ...(trigger?.kind === 'schedule' && { nominalTime: facet(SCHEMAS.nominalTime, { nominalStartTime: trigger.fireTime }) }),
  };
}

/** A custom facet's `_schemaURL` (see facetSchemaUrl). */
function customSchema(name: CustomFacet, settings: EventSettings): string {
  return facetSchemaUrl(name, PRODUCER, settings.publicUrl);
}

/**
 * The job: a pipeline's runs are the pipeline's job; others are the model's
 * (`<project>.<model>`, any version), so each of its runs is a run of one job. Its facets say
 * the model as asked, and once resolved its version.
 */
function jobOf(settings: EventSettings, trigger: RunTrigger | undefined, model: Manifest['model']): RunEvent['job'] {
  const ref = parsedModel(model.requested);
  const name = triggerPipeline(trigger) ?? (ref ? `${ref.project}.${ref.model}` : excerpt(model.requested || 'unknown', 200));
  const resolved = 'project' in model ? { project: model.project, name: model.name, resolvedVersion: model.resolvedVersion } : {};
  return {
    namespace: settings.namespace,
    name,
    facets: {
      jobType: facet(SCHEMAS.jobType, { processingType: 'BATCH', integration: 'BATCH_SCORER', jobType: 'JOB' }),
      batchScorerModel: facet(customSchema('batchScorerModel', settings), {
        requested: excerpt(model.requested, 200),
        ...(ref && { project: ref.project, name: ref.model, requestedVersion: ref.version ?? null }),
        ...resolved,
      }),
    },
  };
}

function parsedModel(text: string) {
  try {
    return parseModelRef(text);
  } catch {
    return undefined;
  }
}
