import type { FastifyInstance } from 'fastify';
import { FACET_SCHEMAS_PATH, shippedFacetSchemas } from '../lineage/index.js';

/** How long a client may keep a schema: a version's file never changes (a changed facet is a new version). */
const CACHE_CONTROL = 'public, max-age=86400';

/**
 * `GET /schemas/openlineage/<version>/<Facet>.json`: the JSON Schemas of this tool's OpenLineage
 * facets, which their `_schemaURL`s name when PUBLIC_URL is set (see facetSchemaUrl). Open to
 * anyone, as the spec's own are: they hold nothing of a deployment, and whoever follows a URL out
 * of a lineage event has no token of it.
 */
export function registerFacetSchemaRoutes(app: FastifyInstance): void {
  for (const [file, body] of shippedFacetSchemas()) {
    app.get(`${FACET_SCHEMAS_PATH}/${file}`, (_request, reply) => reply.header('cache-control', CACHE_CONTROL).type('application/schema+json').send(body));
  }
}
