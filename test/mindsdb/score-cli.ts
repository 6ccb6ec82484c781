import { join } from 'node:path';
import { runCli, type CliResult } from '../helpers/cli.js';

/** A `score` as a user types it against the suite's MindsDB. */
export interface ScoreCall {
  input: string;
  /** `project/model[.version]`. */
  model: string;
  /** The service's base URL: the suite's MindsDB, or a proxy in front of it. */
  service: string;
  out: string;
  runId: string;
  /** Any further flags. */
  flags?: string[];
}

/** Runs the built CLI's `score` to its end; answers its output and the run's folder. */
export async function scoreCli(call: ScoreCall): Promise<CliResult & { folder: string }> {
  const { input, model, service, out, runId, flags = [] } = call;
  const result = await runCli(['score', input, '--model', model, '--out', out, '--service', service, '--run-id', runId, ...flags]);
  return { ...result, folder: join(out, runId) };
}
