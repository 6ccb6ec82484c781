import { readFileSync } from 'node:fs';
import { PACKAGE_ROOT } from '../version.js';

/**
 * This tool's own OpenLineage facets, each described by a JSON Schema the package ships under
 * `schemas/openlineage/<version>/<Facet>.json` (beside `dist/`, in the npm package and the Docker
 * image) and `serve` answers at `/schemas/openlineage/<version>/<Facet>.json`. A facet that changes
 * gets a new version, and the files of the old one stay: events already sent name them.
 */
export const CUSTOM_FACETS = {
  batchScorer: { schema: 'BatchScorerRunFacet', version: '1-0-0' },
  batchScorerModel: { schema: 'BatchScorerModelJobFacet', version: '1-0-0' },
} as const;
export type CustomFacet = keyof typeof CUSTOM_FACETS;

/** Where `serve` answers the facets' schemas, and where they are in the package. */
export const FACET_SCHEMAS_PATH = '/schemas/openlineage';

/** A facet's schema file, below FACET_SCHEMAS_PATH: `<version>/<Facet>.json`. */
function schemaFile(facet: CustomFacet): string {
  const { schema, version } = CUSTOM_FACETS[facet];
  return `${version}/${schema}.json`;
}

/**
 * A custom facet's `_schemaURL`: with PUBLIC_URL (where `serve` is reached), the URL `serve`
 * answers its schema at, so it resolves; without, a URN naming the file in this version's
 * package (`urn:batch-scorer:<version>:schemas/openlineage/...`), which names it as surely but
 * resolves nowhere. Either ends with the JSON Pointer to its definition, as the spec's own do.
 */
export function facetSchemaUrl(facet: CustomFacet, producer: string, publicUrl: string | undefined): string {
  const file = `${FACET_SCHEMAS_PATH.slice(1)}/${schemaFile(facet)}`;
  return `${publicUrl ? `${publicUrl}/` : `${producer}:`}${file}#/$defs/${CUSTOM_FACETS[facet].schema}`;
}

/** The shipped schema files, by their path below FACET_SCHEMAS_PATH, read from the package: what `serve` answers. */
export function shippedFacetSchemas(): Map<string, Buffer> {
  const root = new URL(`.${FACET_SCHEMAS_PATH}/`, PACKAGE_ROOT);
  return new Map((Object.keys(CUSTOM_FACETS) as CustomFacet[]).map((facet) => [schemaFile(facet), readFileSync(new URL(schemaFile(facet), root))] as const));
}
