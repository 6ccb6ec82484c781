import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RequestError } from './http-errors.js';

/** What an issue about all of a part of a request calls it, by fastify's name for the part. */
const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'headers' };

/**
 * The validator compiler of the server's routes: each part of a request (path, query, body,
 * headers) is parsed by the zod schema its route declares, and a bad one is refused with a
 * RequestError naming each bad field (400 E_USAGE, through the error handler). Fastify gives an
 * absent body as null: it is parsed as absent. Headers are looked up by the names the schema
 * declares, whatever their case (Node lowercases them), and left as sent.
 */
const requestValidator: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const where = PART_NAMES[httpPart ?? ''] ?? 'request';
  const declared = httpPart === 'headers' && schema instanceof z.ZodObject ? Object.keys(schema.shape) : undefined;
  return (data: unknown) => {
    const value = declared
      ? Object.fromEntries(declared.map((name) => [name, (data as Record<string, unknown>)[name.toLowerCase()]]))
      : httpPart === 'body' && data === null
        ? undefined
        : data;
    const result = schema.safeParse(value);
    if (!result.success) return { error: RequestError.fromZod(result.error, where) };
    return declared ? {} : { value: result.data };
  };
};

/**
 * Lets an app's routes declare zod schemas (with fastify-type-provider-zod's types): requests
 * are parsed by requestValidator, answers serialized by the type provider's serializer, which
 * checks them against the schema of their status.
 */
export function useZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(requestValidator);
  app.setSerializerCompiler(serializerCompiler);
}
