import type { SwaggerOptions } from '@fastify/swagger';
import { createJsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TOOL, TOOL_LICENSE } from '../version.js';
import { TAGS } from './api-responses.js';
import { eventRunsSchema } from './event-routes.js';
import { errorBodySchema } from './http-errors.js';
import {
  dryRunAnswerSchema,
  runAcceptedSchema,
  runCreatedSchema,
  runDetailSchema,
  runJudgementSchema,
  runListSchema,
  runRejectedSchema,
  runResumedSchema,
  runResumeSchema,
  runStatusSchema,
  runSubmissionSchema,
} from './run-schemas.js';
import { s3EventSchema } from '../triggers/index.js';

/**
 * The shapes the document names in `components.schemas`, by name: a route's request or answer
 * of one of these is a `$ref` to it. Registered in zod's global registry, where their fields'
 * descriptions are, as fastify-type-provider-zod reads them.
 */
const COMPONENTS: Record<string, z.ZodType> = {
  RunSubmission: runSubmissionSchema,
  RunCreated: runCreatedSchema,
  DryRunReport: dryRunAnswerSchema,
  RunStatus: runStatusSchema,
  RunDetail: runDetailSchema,
  RunList: runListSchema,
  RunResumed: runResumedSchema,
  RunResume: runResumeSchema,
  RunAccepted: runAcceptedSchema,
  RunRejected: runRejectedSchema,
  RunJudgement: runJudgementSchema,
  S3Event: s3EventSchema,
  EventRuns: eventRunsSchema,
  Error: errorBodySchema,
};
for (const [id, schema] of Object.entries(COMPONENTS)) z.globalRegistry.add(schema, { ...z.globalRegistry.get(schema), id });

/** Marks an operation whose body may be left out; swagger says every body is required, and transformObject corrects it. */
const OPTIONAL_BODY = 'x-optional-body';

const zodTransform = createJsonSchemaTransform({});

/**
 * `@fastify/swagger`'s options for `serve`: the document's info, server, license, security and
 * tags; each operation comes from its route's own zod schemas (fastify-type-provider-zod). A
 * route without a schema (the pages, bull-board, the assets, the facets' JSON Schemas,
 * `/openapi.json` itself) is no operation of the API, and is left out.
 */
export const swaggerOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'batch-scorer run API',
      version: TOOL.version,
      description: 'Submit, follow, cancel, resume and judge scoring runs; start runs from S3 event notifications.',
      license: { name: TOOL_LICENSE, identifier: TOOL_LICENSE },
    },
    // Relative: the serve instance the document is fetched from (it knows no public URL of its own).
    servers: [{ url: '/', description: 'the batch-scorer serve instance that serves this document' }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API_TOKEN' } } },
    security: [{ bearer: [] }],
    tags: [
      { name: TAGS.runs, description: 'Runs: submit one, list them, follow one, cancel, resume, accept or reject it' },
      { name: TAGS.events, description: 'Notifications that start runs of file-drop pipelines' },
      { name: TAGS.probes, description: 'Metrics, for scrapers (the open health probes, /healthz and /readyz, are left out of this document)' },
    ],
  },
  transform: (document) => {
    if (!document.schema) return { schema: { hide: true }, url: document.url };
    const { schema, url } = zodTransform(document);
    const body = document.schema.body as z.ZodType | undefined;
    const optional = body !== undefined && body.safeParse(undefined).success;
    return { schema: { ...schema, ...(optional && { [OPTIONAL_BODY]: true }), response: withHeaders(schema.response, document.schema.response) }, url };
  },
  transformObject: (document) => finished(jsonSchemaTransformObject(document) as OpenApiObject),
};

type JsonObject = Record<string, unknown>;
interface OpenApiObject extends JsonObject {
  paths: Record<string, Record<string, JsonObject & { requestBody?: { required: boolean } }>>;
  components: { schemas: Record<string, unknown> };
}

/** A response's `headers` (zod schemas by header name), which the type provider's transform leaves out, as swagger takes them. */
function withHeaders(transformed: unknown, given: unknown): unknown {
  if (transformed === undefined || given === undefined) return transformed;
  const responses = { ...(transformed as Record<string, JsonObject>) };
  for (const [status, answer] of Object.entries(given as Record<string, { headers?: Record<string, z.ZodType> }>)) {
    if (!answer.headers) continue;
    const headers = Object.entries(answer.headers).map(([name, schema]) => {
      const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io: 'output' });
      return [name, json];
    });
    responses[status] = { ...responses[status], headers: Object.fromEntries(headers) };
  }
  return responses;
}

/**
 * The document as served: operations whose body may be left out say so; the components no
 * operation reaches are dropped (the type provider writes an input and an output shape of each
 * registered schema), and an input shape whose output shape is unused takes its plain name, as
 * requests are named in COMPONENTS.
 */
function finished(doc: OpenApiObject): OpenApiObject {
  for (const item of Object.values(doc.paths)) {
    for (const operation of Object.values(item)) {
      if (!operation[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      if (operation.requestBody) operation.requestBody.required = false;
    }
  }
  const schemas = doc.components.schemas;
  const used = new Set<string>();
  const reach = (value: unknown) => {
    for (const name of refsIn(value)) {
      if (used.has(name)) continue;
      used.add(name);
      reach(schemas[name]);
    }
  };
  reach(doc.paths);
  const plain = (name: string) => name.slice(0, -INPUT_SUFFIX.length);
  const renamed = new Map([...used].filter((name) => name.endsWith(INPUT_SUFFIX) && !used.has(plain(name))).map((name) => [name, plain(name)]));
  const kept = Object.keys(schemas)
    .filter((name) => used.has(name))
    .map((name): [string, unknown] => [renamed.get(name) ?? name, schemas[name]]);
  const text = JSON.stringify({ ...doc, components: { ...doc.components, schemas: Object.fromEntries(kept) } });
  return JSON.parse(text, (key, value: unknown) =>
    key === '$ref' && typeof value === 'string' ? value.replace(/[^/]+Input$/, (name) => renamed.get(name) ?? name) : value,
  ) as OpenApiObject;
}

/** What the type provider appends to the name of a registered schema's input shape. */
const INPUT_SUFFIX = 'Input';

/** The names of the components `value` refers to. */
function refsIn(value: unknown): string[] {
  const names: string[] = [];
  JSON.stringify(value, (key, v: unknown) => {
    if (key === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) names.push(v.slice('#/components/schemas/'.length));
    return v;
  });
  return names;
}
