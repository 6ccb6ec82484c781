import { NOT_THIS_RUNS } from '../pipeline/finish-run.js';
import type { Manifest } from '../pipeline/manifest.js';
import type { RunStart } from '../pipeline/run-listener.js';
import { triggerPipeline, type RunTrigger } from '../pipeline/run-trigger.js';
import { parseModelRef } from '../service/model-ref.js';
import { formatLocation } from '../storage/location.js';
import { excerpt } from '../text-excerpt.js';
import { TOOL } from '../version.js';
import { datasetName } from './dataset-name.js';
import { lineageRunId } from './run-uuid.js';

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
  // This tool's own facets (docs/pipelines.md, "Lineage"), named under the producer.
  batchScorerRun: `${PRODUCER}:facets#/$defs/BatchScorerRunFacet`,
  batchScorerModel: `${PRODUCER}:facets#/$defs/BatchScorerModelJobFacet`,
};

type Facet = { _producer: string; _schemaURL: string } & Record<string, unknown>;
type Facets = Record<string, Facet>;

export type RunEventType = 'START' | 'COMPLETE' | 'FAIL' | 'ABORT';

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

/** START: the run has claimed its folder. Its input is named when it is one file; a folder's or a glob's files are named at the end. */
export function startEvent(start: RunStart, namespace: string): RunEvent {
  const folder = formatLocation(start.folder);
  const trigger = start.request.trigger;
  const input = datasetName(start.request.input);
  return {
    ...envelope('START', start.startedAt),
    run: { runId: lineageRunId(folder), facets: runFacets(start.runId, folder, trigger) },
    job: job(namespace, trigger, { requested: start.request.model }),
    inputs: input ? [input] : [],
    outputs: [],
  };
}

/**
 * The run's end: COMPLETE (succeeded), FAIL (failed, a drift failure too) or ABORT (cancelled,
 * or stopped by a cap: resumable, neither done nor broken); with every input file and output file
 * the manifest lists, and their rows and bytes. Undefined for a run that never had a folder of
 * its own (one found to be another run's: its UUID would be that run's).
 */
export function endEvent(manifest: Manifest, namespace: string): RunEvent | undefined {
  const { folder, error } = manifest;
  if (folder === null || (error && (NOT_THIS_RUNS as readonly string[]).includes(error.code))) return undefined;
  const trigger = manifest.trigger ?? undefined;
  const eventType = manifest.state === 'succeeded' ? 'COMPLETE' : manifest.state === 'failed' ? 'FAIL' : 'ABORT';
  const files = manifest.inputs.length > 0 ? manifest.inputs : [manifest.input];
  return {
    ...envelope(eventType, manifest.finishedAt),
    run: {
      runId: lineageRunId(folder),
      facets: {
        ...runFacets(manifest.runId, folder, trigger, manifest.state),
        ...(error && { errorMessage: facet(SCHEMAS.errorMessage, { message: `${error.code}: ${error.message}`, programmingLanguage: 'JavaScript' }) }),
      },
    },
    job: job(namespace, trigger, manifest.model),
    inputs: files.flatMap((file) => {
      const dataset = datasetName(file.location);
      if (!dataset) return [];
      const stats = { ...(file.rows !== null && { rowCount: file.rows }), ...(file.size !== null && { size: file.size }) };
      return [
        { ...dataset, ...(Object.keys(stats).length > 0 && { inputFacets: { inputStatistics: facet(SCHEMAS.inputStatistics, { ...stats, fileCount: 1 }) } }) },
      ];
    }),
    outputs: manifest.outputs.flatMap((file) => {
      const dataset = datasetName(file.location);
      return dataset
        ? [{ ...dataset, outputFacets: { outputStatistics: facet(SCHEMAS.outputStatistics, { rowCount: file.rows, size: file.bytes, fileCount: 1 }) } }]
        : [];
    }),
  };
}

function envelope(eventType: RunEventType, eventTime: string) {
  return { eventType, eventTime, producer: PRODUCER, schemaURL: SCHEMAS.runEvent };
}

function facet(schemaURL: string, fields: Record<string, unknown>): Facet {
  return { _producer: PRODUCER, _schemaURL: schemaURL, ...fields };
}

/** This tool's run facet (its run id and folder, what started it, and at the end its state), and a scheduled run's nominal time. */
function runFacets(runId: string, folder: string, trigger: RunTrigger | undefined, state?: Manifest['state']): Facets {
  return {
    batchScorer: facet(SCHEMAS.batchScorerRun, {
      runId,
      folder,
      trigger: trigger?.kind ?? null,
      ...(triggerPipeline(trigger) !== undefined && { pipeline: triggerPipeline(trigger) }),
      ...(state !== undefined && { state }),
    }),
    ...(trigger?.kind === 'schedule' && { nominalTime: facet(SCHEMAS.nominalTime, { nominalStartTime: trigger.fireTime }) }),
  };
}

/**
 * The job: a pipeline's runs are the pipeline's job; others are the model's
 * (`<project>.<model>`, any version), so each of its runs is a run of one job. Its facets say
 * the model as asked, and once resolved its version.
 */
function job(namespace: string, trigger: RunTrigger | undefined, model: Manifest['model']): RunEvent['job'] {
  const ref = parsedModel(model.requested);
  const name = triggerPipeline(trigger) ?? (ref ? `${ref.project}.${ref.model}` : excerpt(model.requested || 'unknown', 200));
  const resolved = 'project' in model ? { project: model.project, name: model.name, resolvedVersion: model.resolvedVersion } : {};
  return {
    namespace,
    name,
    facets: {
      jobType: facet(SCHEMAS.jobType, { processingType: 'BATCH', integration: 'BATCH_SCORER', jobType: 'JOB' }),
      batchScorerModel: facet(SCHEMAS.batchScorerModel, {
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
