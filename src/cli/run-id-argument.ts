import { InvalidArgumentError } from 'commander';
import { runOptionsSchema } from '../config/index.js';

/** A `<runId>` argument: the shape `--run-id` takes, so a path or a typo never reaches storage. */
export function runIdArgument(value: string): string {
  const parsed = runOptionsSchema.shape.runId.unwrap().safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(`run id: ${parsed.error.issues[0].message}, got "${value}"`);
  return parsed.data;
}
