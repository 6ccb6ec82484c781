import type { z } from 'zod';

/**
 * A JSON record kept in Redis, read through the schema its writer used; undefined when the value
 * is not JSON or not of that shape (another release's, or edited by hand), for the caller to
 * refuse in its own words.
 */
export function storedRecord<T>(value: string, schema: z.ZodType<T>): T | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  const record = schema.safeParse(parsed);
  return record.success ? record.data : undefined;
}
