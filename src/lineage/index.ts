/** OpenLineage run events, told by a RunListener, and the facet schemas they name. */

// The listener a command adds to its runs.
export { lineageListener, type LineageListener } from './lineage-listener.js';

// The custom facets' JSON Schemas, served by `serve` at the path their `_schemaURL`s name.
export { FACET_SCHEMAS_PATH, shippedFacetSchemas } from './facet-schemas.js';
