import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';

/** The project's schema of the OpenLineage run events it sends, written from the spec's required fields. */
const validate = new Ajv({ allErrors: true }).compile(
  JSON.parse(readFileSync(new URL('../fixtures/openlineage-run-event.schema.json', import.meta.url), 'utf8')) as object,
);

/** What is wrong with an event, against the schema; undefined when it is valid. */
export function eventProblems(event: unknown): string | undefined {
  if (validate(event)) return undefined;
  return (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}
