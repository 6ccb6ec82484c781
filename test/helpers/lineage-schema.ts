import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';

// OpenLineage's schemas, as test/fixtures/openlineage/ gives them (the core spec 2-0-2 and the
// standard facets this tool sends, each at the $id the spec gives it), and this tool's own facet
// schemas as the package ships them (schemas/openlineage/).

const root = fileURLToPath(new URL('../../', import.meta.url));
const SPEC_FOLDER = join(root, 'test', 'fixtures', 'openlineage');
const SHIPPED_FOLDER = join(root, 'schemas', 'openlineage');
/** Where the spec's run event is defined: every event names it as its schemaURL. */
export const RUN_EVENT_SCHEMA = 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent';
/** A custom facet's `_schemaURL` (PUBLIC_URL's or the URN's, see facetSchemaUrl): the shipped file it names, and the pointer into it. */
const SHIPPED_URL = /^(?:https?:\/\/[^/]+(?:\/[^#]*)?\/|urn:batch-scorer:[^:]+:)(schemas\/openlineage\/[\w-]+\/\w+\.json)(#.*)$/;
/** The id a shipped file is known by here (it has none of its own: it is wherever `serve` answers it). */
const shippedId = (file: string) => `urn:batch-scorer-shipped:${file}`;

const ajv = new Ajv2020({ allErrors: true });
// The formats the spec uses, as RFC 3339, RFC 3986 and RFC 9562 define them (ajv's own are a plugin this project does not depend on).
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/);
ajv.addFormat('uri', /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/);
for (const file of jsonFiles(SPEC_FOLDER)) ajv.addSchema(JSON.parse(readFileSync(join(SPEC_FOLDER, file), 'utf8')) as object);
/** The shipped facet schemas' files, below schemas/openlineage/. */
export const SHIPPED_SCHEMAS = jsonFiles(SHIPPED_FOLDER);
for (const file of SHIPPED_SCHEMAS)
  ajv.addSchema(JSON.parse(readFileSync(join(SHIPPED_FOLDER, file), 'utf8')) as object, shippedId(`schemas/openlineage/${file}`));

type Facets = Record<string, { _schemaURL?: unknown }> | undefined;
interface EventShape {
  run?: { facets?: Facets };
  job?: { facets?: Facets };
  inputs?: { facets?: Facets; inputFacets?: Facets }[];
  outputs?: { facets?: Facets; outputFacets?: Facets }[];
}

/**
 * What is wrong with a run event, undefined when nothing is: against the spec's RunEvent, then
 * each facet against the schema its `_schemaURL` names (the spec's for a standard facet, the
 * shipped file for this tool's own); a facet whose URL names no schema known here is wrong too.
 */
export function eventProblems(event: unknown): string | undefined {
  const problems = schemaProblems(RUN_EVENT_SCHEMA, event, '');
  if (problems.length === 0) problems.push(...facetsOf(event as EventShape).flatMap(([path, facet]) => facetProblems(path, facet)));
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/** The shipped file a custom facet's `_schemaURL` names (`schemas/openlineage/<version>/<Facet>.json`); undefined for any other URL. */
export function shippedFile(schemaURL: string): string | undefined {
  return SHIPPED_URL.exec(schemaURL)?.[1];
}

function facetProblems(path: string, facet: { _schemaURL?: unknown }): string[] {
  const url = String(facet._schemaURL);
  const shipped = SHIPPED_URL.exec(url);
  const ref = shipped ? `${shippedId(shipped[1])}${shipped[2]}` : url;
  return schemaProblems(ref, facet, path);
}

function schemaProblems(ref: string, value: unknown, path: string): string[] {
  let validate;
  try {
    validate = ajv.getSchema(ref);
  } catch (err) {
    return [`${path || '/'} names schema ${ref}, which does not resolve: ${String(err)}`];
  }
  if (!validate) return [`${path || '/'} names schema ${ref}, which is not known here`];
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => `${path}${e.instancePath || (path ? '' : '/')} ${e.message}`);
}

/** Every facet of an event, with where it is (`/run/facets/batchScorer`, `/outputs/0/outputFacets/outputStatistics`). */
function facetsOf(event: EventShape): [string, { _schemaURL?: unknown }][] {
  const at = (path: string, facets: Facets) =>
    Object.entries(facets ?? {}).map(([name, facet]) => [`${path}/${name}`, facet] as [string, { _schemaURL?: unknown }]);
  return [
    ...at('/run/facets', event.run?.facets),
    ...at('/job/facets', event.job?.facets),
    ...(event.inputs ?? []).flatMap((d, i) => [...at(`/inputs/${i}/facets`, d.facets), ...at(`/inputs/${i}/inputFacets`, d.inputFacets)]),
    ...(event.outputs ?? []).flatMap((d, i) => [...at(`/outputs/${i}/facets`, d.facets), ...at(`/outputs/${i}/outputFacets`, d.outputFacets)]),
  ];
}

/** The JSON files below a folder, by their path from it. */
function jsonFiles(folder: string): string[] {
  return (readdirSync(folder, { recursive: true }) as string[]).filter((f) => f.endsWith('.json')).sort();
}
